import MeowWire

/// One request of an explored run, Jepsen-style: invoked, then completed with an outcome. The
/// explorer writes one per step it releases (a device op, a send or fetch, a push delivered or
/// lost, a fault, a kill or restart, a clock change, an observation of what a device shows).
public struct HistoryEntry: Codable, Sendable, Equatable {
    /// The run (schedule) this entry belongs to.
    public var run: Int
    /// Position in the run's history, from 0; the order the explorer released the requests in.
    public var index: Int
    /// The flow step this request carries out; nil for the scheduler's own requests (syncs,
    /// pushes, faults, kills, observations).
    public var step: Int?
    /// The device that made the request, or "cloud" / "explorer" for the scheduler's own.
    public var actor: String
    /// The user the actor was signed in as when it made the request.
    public var user: String?
    /// One of `HistoryOp`'s names, or `custom.NAME` for a team's own step.
    public var op: String
    /// What was asked; the shape of each op's params is stated on `HistoryOp`.
    public var params: JSONValue
    /// Logical times (the explorer's step counter), never wall-clock: a seed's history is the
    /// same on every run.
    public var invoke: Int
    /// When the answer came; nil when none ever did.
    public var complete: Int?
    public var outcome: Outcome
    /// The cloud's request-log sequence numbers of the requests this one caused (a send's
    /// records.modify, a fetch's zone changes), by which an unseen outcome is resolved.
    public var cloudRequests: [Int]

    public init(run: Int, index: Int, step: Int? = nil, actor: String, user: String? = nil, op: String,
                params: JSONValue = .object([:]), invoke: Int, complete: Int? = nil,
                outcome: Outcome, cloudRequests: [Int] = []) {
        self.run = run
        self.index = index
        self.step = step
        self.actor = actor
        self.user = user
        self.op = op
        self.params = params
        self.invoke = invoke
        self.complete = complete
        self.outcome = outcome
        self.cloudRequests = cloudRequests
    }
}

/// How a request ended. `unknown` is what the client saw when no answer came (a timeout, a
/// killed device); the explorer replaces it with `resolved` from the cloud's own request log
/// before the checker runs, and the checker reports any `unknown` left as a failure.
public enum Outcome: Codable, Sendable, Equatable {
    case ok(JSONValue)
    case fail(code: String, message: String)
    case unknown(reason: String)
    /// An unseen outcome settled from the cloud's log: whether it took effect, and the evidence
    /// (e.g. "request log #412: records.modify ok").
    case resolved(committed: Bool, evidence: String)

    /// Whether the request took effect, as far as anyone can know.
    public var tookEffect: Bool? {
        switch self {
        case .ok: true
        case .fail: false
        case let .resolved(committed, _): committed
        case .unknown: nil
        }
    }

    public var result: JSONValue? { if case let .ok(value) = self { value } else { nil } }

    private enum CodingKeys: String, CodingKey { case kind, result, code, message, reason, committed, evidence }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .kind) {
        case "ok": self = .ok(try container.decodeIfPresent(JSONValue.self, forKey: .result) ?? .null)
        case "fail": self = .fail(code: try container.decode(String.self, forKey: .code),
                                  message: try container.decode(String.self, forKey: .message))
        case "unknown": self = .unknown(reason: try container.decode(String.self, forKey: .reason))
        case "resolved": self = .resolved(committed: try container.decode(Bool.self, forKey: .committed),
                                          evidence: try container.decode(String.self, forKey: .evidence))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .kind, in: container, debugDescription:
                "unknown outcome kind \"\(other)\"; expected ok, fail, unknown or resolved")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case let .ok(result):
            try container.encode("ok", forKey: .kind)
            try container.encode(result, forKey: .result)
        case let .fail(code, message):
            try container.encode("fail", forKey: .kind)
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
        case let .unknown(reason):
            try container.encode("unknown", forKey: .kind)
            try container.encode(reason, forKey: .reason)
        case let .resolved(committed, evidence):
            try container.encode("resolved", forKey: .kind)
            try container.encode(committed, forKey: .committed)
            try container.encode(evidence, forKey: .evidence)
        }
    }
}
