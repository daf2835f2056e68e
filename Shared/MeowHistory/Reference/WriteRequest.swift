import MeowWire

extension HistoryEntry {
    /// The device clock's reading a write carries (`params.stamp`), which the per-field merge
    /// compares; nil for entries that are not writes or carry none.
    public var stamp: Double? { params["stamp"]?.doubleValue }
}

/// An object write (insert, update, delete or link) as a history entry states it.
public struct WriteRequest: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case insert, update, delete, link
    }

    public var kind: Kind
    public var entity: String
    public var uuid: String
    /// The fields it sets: an insert's and an update's values, a link's relationship (its value
    /// the destination's UUID); none for a delete.
    public var fields: [String: JSONValue]
    public var stamp: Double
    public var device: String
    public var user: String?
    /// The entry's index in the history.
    public var entry: Int
    /// For a delete, the other objects its delete rules removed (`cascade`, UUIDs, in the params
    /// or the ok result: the runner reads them from the save's `deleted`).
    public var cascade: [String]
    /// The zone an insert was placed in, when the params name it (`zone: {owner, zoneName}`, or
    /// `zoneName` with `zoneOwner`): a step inserting straight into a share's zone.
    public var zone: ZoneRef?
    /// The store asked for (`params.store`) or answered (`result.store`), when either says.
    public var store: String?

    /// Reads a write from an entry; nil for any other op or a write missing its object.
    public init?(_ entry: HistoryEntry) {
        let kind: Kind
        switch entry.op {
        case HistoryOp.insert: kind = .insert
        case HistoryOp.update: kind = .update
        case HistoryOp.delete: kind = .delete
        case HistoryOp.link: kind = .link
        default: return nil
        }
        guard let uuid = entry.params["uuid"]?.stringValue else { return nil }
        self.kind = kind
        self.uuid = uuid
        entity = entry.params["entity"]?.stringValue ?? "object"
        stamp = entry.stamp ?? 0
        device = entry.actor
        user = entry.user
        self.entry = entry.index
        store = entry.outcome.result?["store"]?.stringValue ?? entry.params["store"]?.stringValue
        let zoneParams = entry.params["zone"] ?? entry.params
        if let zoneName = zoneParams["zoneName"]?.stringValue, let owner = (zoneParams["owner"] ?? zoneParams["zoneOwner"])?.stringValue {
            zone = ZoneRef(owner: owner, zoneName: zoneName)
        }
        cascade = (entry.outcome.result?["cascade"] ?? entry.params["cascade"])?.arrayValue?.compactMap(\.stringValue) ?? []
        switch kind {
        case .insert, .update: fields = entry.params["values"]?.objectValue ?? [:]
        case .delete: fields = [:]
        case .link:
            let relationship = entry.params["relationship"]?.stringValue ?? "relationship"
            fields = [relationship: entry.params["to"] ?? .null]
        }
    }

    /// "B's update #12 of CareEvent 7F3A9C21…", the words every explanation names a write by.
    public var described: String {
        "\(device)'s \(kind.rawValue) #\(entry) of \(entity) \(Self.short(uuid))"
    }

    /// "B's update #12 of CareEvent 7F3A9C21…'s note (stamp 105)".
    public func described(field: String) -> String {
        "\(described)'s \(field) (stamp \(Self.format(stamp)))"
    }

    static func short(_ uuid: String) -> String { uuid.count > 8 ? String(uuid.prefix(8)) + "…" : uuid }

    static func format(_ stamp: Double) -> String {
        stamp.rounded() == stamp && abs(stamp) < 9.0e15 ? String(Int(stamp)) : String(stamp)
    }
}
