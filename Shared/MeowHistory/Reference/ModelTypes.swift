import MeowWire

/// A zone in the cloud: whose it is and its name.
public struct ZoneRef: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The zone a private store mirrors into (each user has one).
    public static let coreDataZoneName = "com.apple.coredata.cloudkit.zone"

    public var owner: String
    public var zoneName: String

    public init(owner: String, zoneName: String) {
        self.owner = owner
        self.zoneName = zoneName
    }

    public static func privateZone(of user: String) -> ZoneRef { ZoneRef(owner: user, zoneName: coreDataZoneName) }

    public var description: String { "\(owner)/\(zoneName)" }

    public static func < (lhs: ZoneRef, rhs: ZoneRef) -> Bool { (lhs.owner, lhs.zoneName) < (rhs.owner, rhs.zoneName) }
}

/// What decides an edit of a record another device deleted (docs/RULES.md, "Mirroring").
public enum DeletePolicy: String, Sendable {
    case deleteWins, resurrect
}

/// One field's value and the write that set it.
public struct FieldWrite: Equatable, Sendable {
    public var value: JSONValue
    public var stamp: Double
    public var device: String
    public var entry: Int

    public init(value: JSONValue, stamp: Double, device: String, entry: Int) {
        self.value = value
        self.stamp = stamp
        self.device = device
        self.entry = entry
    }

    /// The merge's order: the later stamp, ties to the greater device name.
    func isLater(than other: FieldWrite) -> Bool {
        (stamp, device) > (other.stamp, other.device)
    }
}

/// A share as the rules say it stands: whether it is on, and each participant's standing.
public struct ShareModel: Equatable, Sendable {
    public struct Participant: Equatable, Sendable {
        public var permission: String
        public var acceptance: String
    }

    public var active = true
    public var participants: [String: Participant] = [:]

    /// Whether `user` may read the zone: an accepted participant with a permission other than none.
    public func reads(_ user: String) -> Bool {
        guard active, let participant = participants[user] else { return false }
        return participant.acceptance == "accepted" && participant.permission != "none"
    }

    /// Whether `user` may write: an accepted readWrite participant of a share that is on.
    public func writes(_ user: String) -> Bool {
        guard active, let participant = participants[user] else { return false }
        return participant.acceptance == "accepted" && participant.permission == "readWrite"
    }
}
