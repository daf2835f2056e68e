import MeowHistory
import MeowWire

/// A team's flow: the actors (devices of users) and each one's ordered steps, the shares they
/// make, the team's own steps and invariants. The explorer runs it under many schedules; each
/// schedule interleaves the actors' steps with sends, fetches, pushes and faults.
///
/// Objects and shares are named symbolically ("s1", "team"): the explorer gives each object a
/// UUID drawn from the seed and learns each share's zone when it is created. A flow's built-in
/// steps have a JSON form (`Codable`), the language-neutral flow file; a team's own step travels
/// in it by name and is bound to code with `bind(_:_:)`.
///
/// ```swift
/// var flow = Flow(name: "two devices edit one session", actors: [
///     FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .update("s1", fields: ["title"])]),
///     FlowActor(device: "B", user: "olivia", steps: [.update("s1", fields: ["title"])]),
/// ])
/// flow.invariants.append(Invariant("title is set") { run in … })
/// ```
public struct Flow: Sendable, Codable {
    public var name: String
    public var actors: [FlowActor]
    /// The shares the flow's `shareCreate` steps make, by name.
    public var shares: [ShareSpec]
    /// The data model every device loads (`store-service --model`); nil: MeowCare's own.
    public var model: String?
    /// Whether the devices run the start-up orphan repair (it makes the model's default parent).
    public var orphanRepair: Bool
    /// The team's invariants, run after the built-in checks. Not in the JSON form.
    public var invariants: [Invariant]
    /// Code for named custom steps whose `Step` carries no closure of its own (flow files).
    public var boundSteps: [String: CustomStep]

    public init(name: String, actors: [FlowActor], shares: [ShareSpec] = [], model: String? = nil, orphanRepair: Bool = false,
                invariants: [Invariant] = []) {
        self.name = name
        self.actors = actors
        self.shares = shares
        self.model = model
        self.orphanRepair = orphanRepair
        self.invariants = invariants
        self.boundSteps = [:]
    }

    /// Binds code to the custom steps named `name` (those read from a flow file, or written
    /// without a closure).
    public mutating func bind(_ name: String, _ body: @escaping CustomStep) {
        boundSteps[name] = body
    }

    /// The names of custom steps that have no code yet: a flow with any cannot run.
    public var unboundSteps: [String] {
        var names: [String] = []
        for actor in actors {
            for step in actor.steps {
                if case let .custom(name, _) = step.kind, step.body == nil, boundSteps[name] == nil, !names.contains(name) { names.append(name) }
            }
        }
        return names
    }

    /// Every step, with the actor that runs it: (actor index, step index).
    var stepCount: Int { actors.reduce(0) { $0 + $1.steps.count } }

    private enum CodingKeys: String, CodingKey { case name, actors, shares, model, orphanRepair }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? "flow"
        actors = try container.decode([FlowActor].self, forKey: .actors)
        shares = try container.decodeIfPresent([ShareSpec].self, forKey: .shares) ?? []
        model = try container.decodeIfPresent(String.self, forKey: .model)
        orphanRepair = try container.decodeIfPresent(Bool.self, forKey: .orphanRepair) ?? false
        invariants = []
        boundSteps = [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(actors, forKey: .actors)
        try container.encode(shares, forKey: .shares)
        try container.encodeIfPresent(model, forKey: .model)
        try container.encode(orphanRepair, forKey: .orphanRepair)
    }
}

/// One device of one user, and the steps it takes in order.
public struct FlowActor: Sendable, Codable {
    /// The device's name: the actor's name in schedules and histories.
    public var device: String
    /// The user the device starts signed in as.
    public var user: String
    public var steps: [Step]

    public init(device: String, user: String, steps: [Step]) {
        self.device = device
        self.user = user
        self.steps = steps
    }
}

/// A share a `shareCreate` step makes: its root object and whom it invites.
public struct ShareSpec: Sendable, Codable, Equatable {
    public struct Participant: Sendable, Codable, Equatable {
        public var user: String
        /// "readOnly" or "readWrite".
        public var permission: String
        public init(user: String, permission: String) {
            self.user = user
            self.permission = permission
        }
    }

    public var name: String
    /// The symbolic name of the root object (saved in the owner's private store).
    public var root: String
    public var participants: [Participant]

    public init(name: String, root: String, participants: [Participant] = []) {
        self.name = name
        self.root = root
        self.participants = participants
    }
}
