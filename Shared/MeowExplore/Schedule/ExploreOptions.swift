import MeowHistory

/// The kinds of fault a schedule may hold; each on (weight > 0) or off, and weighted.
public enum FaultKind: String, Sendable, Codable, CaseIterable, CodingKeyRepresentable {
    case dropAfterCommit
    case holdAndDeliver
    /// kill -9 and restart: needs `persistence: .sqlite` (an in-memory device loses its data).
    case kill
    /// kill -9 at a named crash point (`MEOW_CRASH_AT`) and restart: needs `.sqlite`.
    case crashPoint
    case transientError
    case zoneBusy
    case tokenExpiry
    case clockJump
    /// A push lost rather than delivered.
    case pushLost
}

/// How the explorer runs a flow: which seeds, how many schedules or seconds, which faults, how
/// hard to shrink.
public struct ExploreOptions: Sendable, Codable {
    /// The seeds to run, in order: `firstSeed`, `firstSeed + 1`, … until the budget ends.
    public var firstSeed: UInt64
    public var budget: Budget
    /// Weight of each fault kind at a scheduling point (0 or absent: off). A fault is drawn with
    /// chance `faultRate`, then its kind by these weights.
    public var faults: [FaultKind: Double]
    /// The chance that a scheduling point draws a fault rather than a step, send or fetch.
    public var faultRate: Double
    /// Weights of the ordinary moves: an actor's step, a send, a fetch, a push's delivery.
    public var stepWeight: Double
    public var sendWeight: Double
    public var fetchWeight: Double
    public var pushWeight: Double
    /// Runs the shrinker may spend on a failing schedule.
    public var shrinkBudget: Int
    /// Stop at the first failing schedule (else: every seed of the budget runs, the first
    /// failure is shrunk).
    public var stopAtFirstFailure: Bool
    /// Devices' storage: `.inMemory` (fast) or `.sqlite` (kills and crash points keep data).
    public var persistence: Persistence
    /// Each fetch (and delivered push) that changed something is followed by an `observe` of
    /// the device, so a check sees what it showed between fetches.
    public var observeAfterFetch: Bool
    /// Clusters running seeds at once (each its own cloud and devices). A run mostly waits on
    /// the services, so two use a 2-core machine better than one.
    public var clusters: Int

    public enum Persistence: String, Sendable, Codable { case inMemory, sqlite }

    /// How long to explore. JSON: `{"schedules": 100}` or `{"seconds": 5}`. A budget in seconds
    /// starts no schedule once the time is up (one already running finishes), and always runs
    /// at least one.
    public enum Budget: Sendable, Codable, Equatable {
        case schedules(Int)
        case seconds(Double)

        private enum CodingKeys: String, CodingKey { case schedules, seconds }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let count = try container.decodeIfPresent(Int.self, forKey: .schedules) {
                self = .schedules(count)
            } else if let limit = try container.decodeIfPresent(Double.self, forKey: .seconds) {
                self = .seconds(limit)
            } else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                    "a budget is {\"schedules\": N} or {\"seconds\": S}"))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case let .schedules(count): try container.encode(count, forKey: .schedules)
            case let .seconds(limit): try container.encode(limit, forKey: .seconds)
            }
        }
    }

    public init(firstSeed: UInt64 = 1, budget: Budget = .schedules(100), faults: [FaultKind: Double] = ExploreOptions.defaultFaults,
                faultRate: Double = 0.1, stepWeight: Double = 4, sendWeight: Double = 2, fetchWeight: Double = 1, pushWeight: Double = 2,
                shrinkBudget: Int = 200, stopAtFirstFailure: Bool = true, persistence: Persistence = .inMemory, observeAfterFetch: Bool = true, clusters: Int = 1) {
        self.firstSeed = firstSeed
        self.budget = budget
        self.faults = faults
        self.faultRate = faultRate
        self.stepWeight = stepWeight
        self.sendWeight = sendWeight
        self.fetchWeight = fetchWeight
        self.pushWeight = pushWeight
        self.shrinkBudget = shrinkBudget
        self.stopAtFirstFailure = stopAtFirstFailure
        self.persistence = persistence
        self.observeAfterFetch = observeAfterFetch
        self.clusters = clusters
    }

    /// Every fault an in-memory cluster can take, equally weighted; kills and crash points off.
    public static let defaultFaults: [FaultKind: Double] = [
        .dropAfterCommit: 1, .holdAndDeliver: 1, .transientError: 1, .zoneBusy: 1, .tokenExpiry: 1, .clockJump: 1, .pushLost: 1,
    ]

    /// No faults at all: only the interleaving of steps, sends, fetches and pushes.
    public static let noFaults: [FaultKind: Double] = [:]

    func weight(_ kind: FaultKind) -> Double { max(0, faults[kind] ?? 0) }

    private enum CodingKeys: String, CodingKey {
        case firstSeed, budget, faults, faultRate, stepWeight, sendWeight, fetchWeight, pushWeight, shrinkBudget, stopAtFirstFailure, persistence,
             observeAfterFetch, clusters
    }

    /// Any member left out takes its default, so an options file names only what it changes.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ExploreOptions()
        self.init(firstSeed: try c.decodeIfPresent(UInt64.self, forKey: .firstSeed) ?? d.firstSeed,
                  budget: try c.decodeIfPresent(Budget.self, forKey: .budget) ?? d.budget,
                  faults: try c.decodeIfPresent([FaultKind: Double].self, forKey: .faults) ?? d.faults,
                  faultRate: try c.decodeIfPresent(Double.self, forKey: .faultRate) ?? d.faultRate,
                  stepWeight: try c.decodeIfPresent(Double.self, forKey: .stepWeight) ?? d.stepWeight,
                  sendWeight: try c.decodeIfPresent(Double.self, forKey: .sendWeight) ?? d.sendWeight,
                  fetchWeight: try c.decodeIfPresent(Double.self, forKey: .fetchWeight) ?? d.fetchWeight,
                  pushWeight: try c.decodeIfPresent(Double.self, forKey: .pushWeight) ?? d.pushWeight,
                  shrinkBudget: try c.decodeIfPresent(Int.self, forKey: .shrinkBudget) ?? d.shrinkBudget,
                  stopAtFirstFailure: try c.decodeIfPresent(Bool.self, forKey: .stopAtFirstFailure) ?? d.stopAtFirstFailure,
                  persistence: try c.decodeIfPresent(Persistence.self, forKey: .persistence) ?? d.persistence,
                  observeAfterFetch: try c.decodeIfPresent(Bool.self, forKey: .observeAfterFetch) ?? d.observeAfterFetch,
                  clusters: try c.decodeIfPresent(Int.self, forKey: .clusters) ?? d.clusters)
    }
}
