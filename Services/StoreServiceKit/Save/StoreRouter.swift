import MeowWire
import ServiceRuntime
import StoreWire

/// The routing rule, apart from any store: given the new objects and what they are related to,
/// decide each one's store and say why.
///
/// ```swift
/// let router = StoreRouter(mode: .deterministic, stores: [.init(name: "Private", scope: .private, entities: ["CareEvent"])])
/// let decisions = try router.route([.init(entity: "CareEvent", assigned: nil, links: [])])
/// ```
public struct StoreRouter: Sendable {
    public struct StoreInfo: Sendable {
        public var name: String
        public var scope: StoreScope
        public var entities: Set<String>
        public init(name: String, scope: StoreScope, entities: Set<String>) {
            self.name = name
            self.scope = scope
            self.entities = entities
        }
    }

    public struct Decision: Sendable, Equatable {
        public var store: Int
        public var reason: RoutingReason
        /// Why, in parts: a save routes every new object and the text is read only by a debug log.
        var explanation: Explanation
        /// Why, as a person reads it.
        public var detail: String { explanation.text }

        package init(store: Int, reason: RoutingReason, detail: String) {
            (self.store, self.reason, self.explanation) = (store, reason, .text(detail))
        }

        init(store: Int, reason: RoutingReason, explanation: Explanation) {
            (self.store, self.reason, self.explanation) = (store, reason, explanation)
        }
    }

    /// A decision's detail, kept as the names it is made of until someone reads it.
    enum Explanation: Sendable, Equatable {
        case text(String)
        case assigned(store: String)
        case related(entity: String, relationship: String, store: String)
        case onlyStore(store: String, entity: String)
        case loadOrder(entity: String)

        var text: String {
            switch self {
            case let .text(text): return text
            case let .assigned(store): return "assigned to \(store)"
            case let .related(entity, relationship, store): return "related object via \(entity).\(relationship) is in \(store)"
            case let .onlyStore(store, entity): return "\(store) is the only store holding \(entity)"
            case let .loadOrder(entity): return "first store in load order holding \(entity) (Core Data's behaviour)"
            }
        }

        /// Equal when they read the same, however they are kept.
        static func == (a: Explanation, b: Explanation) -> Bool { a.text == b.text }
    }

    /// What a relationship of a new object points at: another new object (by index in the
    /// routed list) or an object already in a store.
    public enum LinkTarget: Sendable {
        case newObject(Int)
        case store(Int)
    }

    public struct Input: Sendable {
        public var entity: String
        public var assigned: Int?
        public var links: [(relationship: String, target: LinkTarget)]
        public init(entity: String, assigned: Int?, links: [(relationship: String, target: LinkTarget)]) {
            self.entity = entity
            self.assigned = assigned
            self.links = links
        }
    }

    public let mode: RoutingMode
    public let stores: [StoreInfo]

    public init(mode: RoutingMode, stores: [StoreInfo]) {
        self.mode = mode
        self.stores = stores
    }

    public func route(_ inputs: [Input]) throws -> [Decision] {
        // Each object's store so far and the link that decided it (-1: assigned); the decisions,
        // which carry their explanation's names, are made once at the end.
        var chosen = inputs.map(\.assigned)
        var deciding = [Int](repeating: -1, count: inputs.count)
        var holding = EntityHolding(stores: stores)
        // Pull unassigned objects into the store of a related object, to a fixed point (a new
        // event related to a new session that was assigned follows the session).
        var progress = true
        while progress {
            progress = false
            for index in inputs.indices where chosen[index] == nil {
                for (number, link) in inputs[index].links.enumerated() {
                    let store: Int?
                    switch link.target {
                    case let .store(s): store = s
                    case let .newObject(other): store = chosen[other]
                    }
                    guard let store, holding.holds(store, inputs[index].entity) else { continue }
                    chosen[index] = store
                    deciding[index] = number
                    progress = true
                    break
                }
            }
        }
        // A batch of unrelated new objects is usually of one entity: its fallback is worked out once.
        var lastFallback: (entity: String, decision: Decision)?
        return try inputs.indices.map { index in
            let input = inputs[index]
            guard let store = chosen[index] else {
                if let lastFallback, lastFallback.entity == input.entity { return lastFallback.decision }
                let decision = try fallback(entity: input.entity)
                lastFallback = (input.entity, decision)
                return decision
            }
            guard deciding[index] >= 0 else {
                return Decision(store: store, reason: .assigned, explanation: .assigned(store: stores[store].name))
            }
            return Decision(store: store, reason: .relatedObject,
                            explanation: .related(entity: input.entity, relationship: input.links[deciding[index]].relationship, store: stores[store].name))
        }
    }

    /// Whether a store holds an entity, the last answer kept: a batch asks about one entity and
    /// one store object after object.
    private struct EntityHolding {
        let stores: [StoreInfo]
        var last: (store: Int, entity: String, holds: Bool)?

        mutating func holds(_ store: Int, _ entity: String) -> Bool {
            if let last, last.store == store, last.entity == entity { return last.holds }
            let holds = stores[store].entities.contains(entity)
            last = (store, entity, holds)
            return holds
        }
    }

    /// Where an object with neither an assign nor a related store goes.
    public func fallback(entity: String) throws -> Decision {
        let candidates = stores.indices.filter { stores[$0].entities.contains(entity) }
        guard let first = candidates.first else {
            throw ServiceError(.entityNotInStore, "No loaded store holds entity \(entity); check the model's configurations.",
                               details: ["entity": .string(entity)])
        }
        if candidates.count == 1 {
            return Decision(store: first, reason: .onlyStoreWithEntity, explanation: .onlyStore(store: stores[first].name, entity: entity))
        }
        switch mode {
        case .legacy:
            return Decision(store: first, reason: .loadOrder, explanation: .loadOrder(entity: entity))
        case .strict:
            throw ServiceError(.ambiguousStoreAssignment,
                               "A new \(entity) has no assigned store and no related object with a store; \(candidates.map { stores[$0].name }.joined(separator: " and ")) could hold it. Assign it with object.assign (or relate it to an object that has a store) before saving.",
                               details: ["entity": .string(entity), "stores": .array(candidates.map { .string(stores[$0].name) })])
        case .deterministic:
            let target = candidates.first { stores[$0].scope == .private } ?? first
            return Decision(store: target, reason: .privateStoreDefault, detail: "new objects default to the private store")
        }
    }
}
