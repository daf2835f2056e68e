import MeowWire

/// Where a client stands in a zone's or a database's change log (CloudKit's
/// `CKServerChangeToken`). A client keeps it as it came and sends it back as `since`; only the
/// sync-service reads what is inside (`Zone`, `Database`), and a token it cannot read is
/// `invalidArguments`. On the wire it is a string.
public struct ChangeToken: Sendable, Hashable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var text: String

    public init(_ text: String) { self.text = text }
    public init(stringLiteral text: String) { self.text = text }

    public init(from decoder: any Decoder) throws {
        text = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    public var description: String { text }

    /// A zone change token: `z<zone>.<seq>.<horizon>[.<reading>]`: the zone's row id (a
    /// recreated zone gets a new one), the last change the holder has, the zone's horizon when
    /// it was issued, and for a participant the start of their current reading of the zone,
    /// left out when 0.
    public struct Zone: Sendable, Hashable {
        public var zone: Int64
        public var seq: Int64
        public var horizon: Int64
        public var reading: Int64

        public init(zone: Int64, seq: Int64, horizon: Int64, reading: Int64 = 0) {
            self.zone = zone
            self.seq = seq
            self.horizon = horizon
            self.reading = reading
        }

        /// Reads `token`; one that is not a zone token of this service is `invalidArguments`.
        public init(_ token: ChangeToken) throws(WireError) {
            let parts = token.text.split(separator: ".")
            guard parts.count == 3 || parts.count == 4, parts[0].hasPrefix("z"), let zone = Int64(parts[0].dropFirst()),
                  let seq = Int64(parts[1]), let horizon = Int64(parts[2]) else { throw Self.unreadable }
            var reading: Int64 = 0
            if parts.count == 4 {
                guard let value = Int64(parts[3]) else { throw Self.unreadable }
                reading = value
            }
            self.init(zone: zone, seq: seq, horizon: horizon, reading: reading)
        }

        private static var unreadable: WireError {
            WireError(.invalidArguments, "params.since is not a zone change token from this service.")
        }

        public var token: ChangeToken {
            ChangeToken(reading == 0 ? "z\(zone).\(seq).\(horizon)" : "z\(zone).\(seq).\(horizon).\(reading)")
        }
    }

    /// A database change token: `d<seq>.<horizon>`: the last database change the holder has,
    /// and the database's horizon when it was issued.
    public struct Database: Sendable, Hashable {
        public var seq: Int64
        public var horizon: Int64

        public init(seq: Int64, horizon: Int64) {
            self.seq = seq
            self.horizon = horizon
        }

        /// Reads `token`; one that is not a database token of this service is `invalidArguments`.
        public init(_ token: ChangeToken) throws(WireError) {
            let parts = token.text.dropFirst().split(separator: ".")
            guard token.text.hasPrefix("d"), parts.count == 2, let seq = Int64(parts[0]), let horizon = Int64(parts[1]) else {
                throw WireError(.invalidArguments, "params.since is not a database change token from this service.")
            }
            self.init(seq: seq, horizon: horizon)
        }

        public var token: ChangeToken { ChangeToken("d\(seq).\(horizon)") }
    }
}
