import MeowWire

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

    /// Why `user` may not read `zone` at the end, in words.
    public func whyNotReading(_ user: String, _ zone: ZoneRef) -> String {
        guard let share = shares[zone] else { return "\(zone) is \(zone.owner)'s and not shared" }
        guard share.active else { return "the share of \(zone) was stopped" }
        guard let participant = share.participants[user] else { return "\(user) is no participant of \(zone)" }
        if participant.acceptance != "accepted" { return "\(user) is \(participant.acceptance) on \(zone)" }
        return "\(user) has permission \(participant.permission) on \(zone)"
    }

    /// What the rules made of every write of one record, a line each in history order, then how
    /// it ends: what a report prints under a failure about that record.
    public func story(of uuid: String) -> [String] {
        let lines = writes.values.filter { $0.uuid == uuid }.sorted { $0.entry < $1.entry }.map { write -> String in
            if write.kind == .delete || write.fields.isEmpty { return "\(write.described): \(fate(of: write.entry, field: nil).words)" }
            let fields = write.fields.keys.sorted().map { "\($0) \(fate(of: write.entry, field: $0).words)" }
            return "\(write.described) (stamp \(WriteRequest.format(write.stamp))): \(fields.joined(separator: ", "))"
        }
        guard let record = records[uuid] else { return lines }
        let end: String
        if record.exists {
            let fields = record.fields.keys.sorted().map { "\($0) from #\(record.fields[$0]?.entry ?? 0)" }
            end = "ends in \(record.zone)" + (fields.isEmpty ? "" : " with " + fields.joined(separator: ", "))
        } else {
            end = record.deletedBy.map { "ends deleted by #\($0)" } ?? "never reaches the cloud"
        }
        return lines + ["\(record.entity) \(WriteRequest.short(uuid)) \(end)."]
    }

    /// The writes that set `value` on `field` of `uuid` (values are unique per write, so at most
    /// one unless a history reuses values).
    public func writers(of value: JSONValue, uuid: String, field: String) -> [WriteRequest] {
        (valueIndex[uuid]?[field]?[value.canonical] ?? []).compactMap { writes[$0] }
    }

    /// Record → field → canonical value → the writes that set it, in history order.
    var valueIndex: [String: [String: [JSONValue: [Int]]]] = [:]

    mutating func indexValues() {
        valueIndex = [:]
        for write in writes.values.sorted(by: { $0.entry < $1.entry }) {
            for (field, value) in write.fields { valueIndex[write.uuid, default: [:]][field, default: [:]][value.canonical, default: []].append(write.entry) }
        }
    }
}
