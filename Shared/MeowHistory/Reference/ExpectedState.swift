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

/// What became of a write, or of one field of it, by the rules.
public enum WriteFate: Equatable, Sendable {
    /// The cloud ends with this value (for a delete: the record stays deleted).
    case holds
    /// A later write of the same field, made knowing this one, replaced it.
    case overwritten(by: Int)
    /// Both sides changed the field; the other edit is the later by stamp (ties: device name).
    case lostMerge(to: Int)
    /// The record was deleted, and the delete won over this edit.
    case deleted(by: Int)
    /// It reached the cloud in this send while its principal lacked write permission.
    case refused(send: Int)
    /// The rules dropped it before any send carried it (the zone was lost, the account switched).
    case discarded(at: Int, reason: String)
    /// No send of its device that took effect carried it.
    case unsent

    /// The fate in words, for explanations.
    public var words: String {
        switch self {
        case .holds: "holds"
        case let .overwritten(by): "overwritten by #\(by)"
        case let .lostMerge(to): "lost the merge to #\(to)"
        case let .deleted(by): "deleted by #\(by)"
        case let .refused(send): "refused at send #\(send)"
        case let .discarded(at, reason): "discarded at #\(at) (\(reason))"
        case .unsent: "never sent"
        }
    }

    /// Whether the rules excuse the write's absence from the end state.
    public var isExcused: Bool {
        switch self {
        case .holds, .unsent: false
        default: true
        }
    }
}

/// A record as the rules say the cloud ends with it.
public struct ExpectedRecord: Equatable, Sendable {
    public var uuid: String
    public var entity: String
    public var zone: ZoneRef
    public var exists: Bool
    /// Each field's value and the write that set it (while the record exists).
    public var fields: [String: FieldWrite]
    /// The delete that removed it, when it does not exist.
    public var deletedBy: Int?
    /// Per field, the writes that lost a merge decided by stamps: a final value from one of these
    /// is a wrong conflict outcome, not a lost write.
    public var mergeLosers: [String: Set<Int>]
    /// Edits that met the delete and lost to it (deleteWins): the record still showing one of
    /// them is a wrong conflict outcome, not a lost delete.
    public var deleteLosers: Set<Int>

    public init(uuid: String, entity: String, zone: ZoneRef, exists: Bool = true, fields: [String: FieldWrite] = [:],
                deletedBy: Int? = nil, mergeLosers: [String: Set<Int>] = [:], deleteLosers: Set<Int> = []) {
        self.uuid = uuid
        self.entity = entity
        self.zone = zone
        self.exists = exists
        self.fields = fields
        self.deletedBy = deletedBy
        self.mergeLosers = mergeLosers
        self.deleteLosers = deleteLosers
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

/// A write the rules kept out of the cloud for want of permission: refused by the server when
/// its send reached it, or discarded on its device when the zone was lost before any send.
public struct Refusal: Equatable, Sendable {
    public enum Kind: Sendable { case refused, discarded }

    /// The send that was refused, or the fetch (or leave) that discarded it.
    public var at: Int
    public var device: String
    /// What the writer lacked, in words ("bob had readOnly on alice/Share-1").
    public var why: String
    public var kind: Kind
}

/// What replaying a history under the documented rules yields.
public struct ExpectedState: Sendable {
    /// Every record any write named, by UUID (its record name).
    public var records: [String: ExpectedRecord] = [:]
    /// Every object write that took effect on its device, by history index.
    public var writes: [Int: WriteRequest] = [:]
    /// Shares by zone.
    public var shares: [ZoneRef: ShareModel] = [:]
    /// Each device's fetches that took effect, in order (a push delivered and a settle count).
    public var fetches: [String: [Int]] = [:]
    /// Notes on what the history left open and how the model decided it, one sentence each.
    public var assumptions: [String] = []
    /// Writes kept out of the cloud for want of permission, by history index.
    public var refusals: [Int: Refusal] = [:]
    var wholeFates: [Int: WriteFate] = [:]
    var fieldFates: [Int: [String: WriteFate]] = [:]

    /// The fate of one field of a write; for a delete, pass nil.
    public func fate(of entry: Int, field: String?) -> WriteFate {
        if let whole = wholeFates[entry], whole != .holds { return whole }
        if let field, let fate = fieldFates[entry]?[field] { return fate }
        return wholeFates[entry] ?? .unsent
    }

    /// Whether `user` may read `zone` at the end: its owner always, a participant while accepted.
    public func reads(_ user: String, _ zone: ZoneRef) -> Bool {
        zone.owner == user || (shares[zone]?.reads(user) ?? false)
    }

    /// The writes that set `value` on `field` of `uuid` (values are unique per write, so at most
    /// one unless a history reuses values).
    public func writers(of value: JSONValue, uuid: String, field: String) -> [WriteRequest] {
        writes.values.filter { $0.uuid == uuid && $0.fields[field] == value }.sorted { $0.entry < $1.entry }
    }
}
