/// `clock.set`'s params: `{}` reads the clock, `{"now": seconds}` sets it (null: the real clock
/// again), `{"advanceSeconds": n}` moves it; one of the two at most.
public struct DeviceClockParams: Codable, Sendable, Hashable {
    /// nil: not given; `.some(nil)`: given as null.
    public var now: Double??
    public var advanceSeconds: Double?

    public init(now: Double?? = nil, advanceSeconds: Double? = nil) {
        self.now = now
        self.advanceSeconds = advanceSeconds
    }

    enum CodingKeys: String, CodingKey { case now, advanceSeconds }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // A present null (`"now": null`) is "back to the real clock", not "no change".
        now = container.contains(.now) ? .some(try container.decodeIfPresent(Double.self, forKey: .now)) : .none
        advanceSeconds = try container.decodeIfPresent(Double.self, forKey: .advanceSeconds)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let now { try container.encode(now, forKey: .now) }
        try container.encodeIfPresent(advanceSeconds, forKey: .advanceSeconds)
    }
}

/// `clock.set`'s answer: once set, the device's clock keeps running from its new reading.
public struct DeviceClockState: Codable, Sendable, Hashable {
    /// Seconds since 1970, as the device reads its clock now.
    public var now: Double
    /// How far it is set from the real clock (0: not set).
    public var offsetSeconds: Double

    public init(now: Double, offsetSeconds: Double) {
        self.now = now
        self.offsetSeconds = offsetSeconds
    }
}
