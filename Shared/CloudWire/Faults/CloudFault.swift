import MeowWire

/// A fault an operator arms for tests (`admin.injectFault`, or a start-up file `--faults FILE`):
/// the next `count` requests matching `op`, `user`, `zone`, `zoneOwner` and `recordType` (each
/// with `probability`, drawn from a generator seeded by `seed`) get the fault's effect. A field
/// left out matches anything.
///
/// ```swift
/// try await cluster.cloud.admin.injectFault(CloudFault(code: "requestRateLimited", op: "records.modify", user: "olivia", retryAfterSeconds: 3))
/// try await cluster.cloud.admin.injectFault(CloudFault(op: "records.modify", effect: .hold))
/// ```
public struct CloudFault: Codable, Sendable, Hashable {
    /// What the server does to a matching request.
    public enum Effect: String, Codable, Sendable, Hashable, CaseIterable {
        /// Answer `code` as the whole request's error.
        case error
        /// Close the connection without a reply; nothing is applied.
        case dropBeforeCommit
        /// Apply the request, then close without a reply (the client cannot know).
        case dropAfterCommit
        /// Apply the request, send the first half of the reply frame and close.
        case partialFrame
        /// Only wait `latencyMilliseconds`.
        case latency
        /// Wait, before running, until `admin.releaseHeldRequests` (or the server's longest
        /// hold): a test makes its move while a client's request is at the server.
        case hold
        /// records.modify only: the same wait, after the request has decided every item and
        /// before it commits; other requests, of other zones, run meanwhile.
        case holdBeforeCommit
    }

    /// The CloudKit error to answer (effect `error`, the default).
    public var code: ErrorCode?
    public var op: String?
    public var user: String?
    /// Only requests naming a zone of this name (a record's zone in records.modify and
    /// records.fetch; the zone asked for by changes.fetchZone, zones.*, shares.*, participants.*).
    public var zone: String?
    /// Only requests naming a zone owned by this user (`__defaultOwner__` is the caller).
    public var zoneOwner: String?
    /// Only records.modify requests saving a record of this type (e.g. `CD_CareEvent`): deletes
    /// and fetches name no record type, so they never match.
    public var recordType: String?
    public var count: Int?
    public var retryAfterSeconds: Double?
    /// Run the request first, then answer the error (serverResponseLost: "it may have been applied").
    public var afterApplying: Bool?
    public var effect: Effect?
    /// Added before the request runs (any effect; the only one of `latency`).
    public var latencyMilliseconds: Int?
    /// 0…1 (default 1): each matching request gets the fault with this probability.
    public var probability: Double?
    /// Seeds the generator behind `probability`, so a run repeats exactly.
    public var seed: UInt64?

    public init(code: ErrorCode? = nil, op: String? = nil, user: String? = nil, zone: String? = nil, zoneOwner: String? = nil,
                recordType: String? = nil, count: Int? = nil, retryAfterSeconds: Double? = nil, afterApplying: Bool? = nil,
                effect: Effect? = nil, latencyMilliseconds: Int? = nil, probability: Double? = nil, seed: UInt64? = nil) {
        self.code = code
        self.op = op
        self.user = user
        self.zone = zone
        self.zoneOwner = zoneOwner
        self.recordType = recordType
        self.count = count
        self.retryAfterSeconds = retryAfterSeconds
        self.afterApplying = afterApplying
        self.effect = effect
        self.latencyMilliseconds = latencyMilliseconds
        self.probability = probability
        self.seed = seed
    }

    private enum CodingKeys: String, CodingKey {
        case code, op, user, zone, zoneOwner, recordType, count, retryAfterSeconds, afterApplying, effect, latencyMilliseconds, probability, seed
    }

    /// An effect the server does not have is the request's invalidArguments (as every other bad
    /// value of a fault is), naming the effects it has.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        code = try c.decodeIfPresent(ErrorCode.self, forKey: .code)
        op = try c.decodeIfPresent(String.self, forKey: .op)
        user = try c.decodeIfPresent(String.self, forKey: .user)
        zone = try c.decodeIfPresent(String.self, forKey: .zone)
        zoneOwner = try c.decodeIfPresent(String.self, forKey: .zoneOwner)
        recordType = try c.decodeIfPresent(String.self, forKey: .recordType)
        count = try c.decodeIfPresent(Int.self, forKey: .count)
        retryAfterSeconds = try c.decodeIfPresent(Double.self, forKey: .retryAfterSeconds)
        afterApplying = try c.decodeIfPresent(Bool.self, forKey: .afterApplying)
        if let name = try c.decodeIfPresent(String.self, forKey: .effect) {
            guard let effect = Effect(rawValue: name) else {
                let names = Effect.allCases.map(\.rawValue)
                throw WireError(.invalidArguments, "effect must be \(names.dropLast().joined(separator: ", ")) or \(names[names.count - 1]); got '\(name)'.")
            }
            self.effect = effect
        }
        latencyMilliseconds = try c.decodeIfPresent(Int.self, forKey: .latencyMilliseconds)
        probability = try c.decodeIfPresent(Double.self, forKey: .probability)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
    }
}

/// The faults armed now (`admin.injectFault`, `admin.clearFaults`; a `--faults FILE` holds one).
public struct CloudFaults: Codable, Sendable {
    public var faults: [CloudFault]

    public init(faults: [CloudFault]) {
        self.faults = faults
    }
}
