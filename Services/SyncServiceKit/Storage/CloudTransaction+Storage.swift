import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// A zone row.
struct ZoneRow: Sendable, Hashable {
    var id: Int64
    var owner: String
    var name: String
    var horizon: Int64
    var zoneID: ZoneID { ZoneID(zoneName: name, ownerName: owner) }
    /// `_defaultZone` is neither atomic nor change-fetchable, as in CloudKit.
    var isDefaultZone: Bool { name == ZoneID.defaultZoneName }
}

/// A record row (live or tombstone) as stored.
struct StoredRecord: Sendable {
    var name: String
    var type: String
    var fields: String?
    var tag: String
    var seq: Int64
    var deleted: Bool
    var created: Double
    var creator: String
    var modified: Double
    var modifier: String
    var parent: String?
    var share: String?

    static let columns = "name, type, fields, tag, seq, deleted, created, creator, modified, modifier, parent, share"
}

extension StoredRecord {
    /// The statement's current row, from a query selecting `columns` (typed reads: no `Row`).
    init(_ statement: Statement) {
        name = statement.string(at: 0) ?? ""
        type = statement.string(at: 1) ?? ""
        fields = statement.string(at: 2)
        tag = statement.string(at: 3) ?? ""
        seq = statement.int64(at: 4)
        deleted = statement.int64(at: 5) == 1
        created = statement.value(at: 6).double ?? 0
        creator = statement.string(at: 7) ?? ""
        modified = statement.value(at: 8).double ?? 0
        modifier = statement.string(at: 9) ?? ""
        parent = statement.string(at: 10)
        share = statement.string(at: 11)
    }

    init(row: Row) {
        name = row[0].string ?? ""
        type = row[1].string ?? ""
        fields = row[2].string
        tag = row[3].string ?? ""
        seq = row[4].int64 ?? 0
        deleted = row[5].int64 == 1
        created = row[6].double ?? 0
        creator = row[7].string ?? ""
        modified = row[8].double ?? 0
        modifier = row[9].string ?? ""
        parent = row[10].string
        share = row[11].string
    }
}

extension CloudTransaction {
    // MARK: Zones

    /// The zone of this request's environment.
    func zone(owner: String, name: String) throws -> ZoneRow? {
        try db.query("SELECT id, owner, name, horizon FROM zones WHERE environment = ? AND owner = ? AND name = ?",
                     [environment.rawValue, owner, name]).first.map(Self.zoneRow)
    }

    func zone(id: Int64) throws -> ZoneRow? {
        try db.query("SELECT id, owner, name, horizon FROM zones WHERE id = ?", [id]).first.map(Self.zoneRow)
    }

    static func zoneRow(_ row: Row) -> ZoneRow {
        ZoneRow(id: row[0].int64 ?? 0, owner: row[1].string ?? "", name: row[2].string ?? "", horizon: row[3].int64 ?? 0)
    }

    /// The zone (of `environment`, by default this request's), created if missing. Returns whether it was created.
    func ensureZone(owner: String, name: String, environment: CloudEnvironment? = nil) throws -> (ZoneRow, created: Bool) {
        let environment = environment ?? self.environment
        if let existing = try db.query("SELECT id, owner, name, horizon FROM zones WHERE environment = ? AND owner = ? AND name = ?",
                                       [environment.rawValue, owner, name]).first.map(Self.zoneRow) {
            return (existing, false)
        }
        try db.execute("INSERT INTO zones(owner, name, created, horizon, environment) VALUES (?, ?, ?, 0, ?)", [owner, name, now, environment.rawValue])
        let row = ZoneRow(id: db.lastInsertRowID, owner: owner, name: name, horizon: 0)
        return (row, true)
    }

    // MARK: Records

    static let recordSQL = "SELECT \(StoredRecord.columns) FROM records WHERE zone = ? AND name = ?"

    func record(zone: Int64, name: String) throws -> StoredRecord? {
        var found: StoredRecord?
        try db.cached(Self.recordSQL).forEach([zone, name]) { found = StoredRecord($0) }
        return found
    }

    static let nextRecordSQL = "SELECT \(StoredRecord.columns) FROM records WHERE zone = ? AND name >= ? ORDER BY name LIMIT 1"

    /// The rows (live or tombstones) `zone` holds of those named `names`, by name: the names
    /// sorted as SQLite orders text (by their UTF-8 bytes) and the zone's `(zone, name)` index
    /// walked beside them, each probe reading the first row at or after a name. A probe finds
    /// that name or skips every name before the row it found, so a batch takes at most one
    /// probe per name, and new names among few stored ones (or after all of them) take a few.
    func storedRecords(zone: Int64, named names: [String]) throws -> [String: StoredRecord] {
        let sorted = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let next = try db.cached(Self.nextRecordSQL)
        var found: [String: StoredRecord] = [:]
        var index = 0
        while index < sorted.count {
            var row: StoredRecord?
            try next.forEach([zone, sorted[index]]) { row = StoredRecord($0) }
            guard let row else { break }
            while index < sorted.count, sorted[index].utf8.lexicographicallyPrecedes(row.name.utf8) { index += 1 }
            if index < sorted.count, sorted[index].utf8.elementsEqual(row.name.utf8) {
                found[sorted[index]] = row
                index += 1
            }
        }
        return found
    }

    func liveRecord(zone: Int64, name: String) throws -> StoredRecord? {
        guard let record = try record(zone: zone, name: name), !record.deleted else { return nil }
        return record
    }

    func encodeFields(_ fields: [String: JSONValue]) throws -> String {
        RecordFields(fields).text
    }

    func decodeFields(_ text: String?) -> [String: JSONValue] {
        guard let text else { return [:] }
        return (try? JSONParser.parse(text)).flatMap(FieldCoding.normalized) ?? [:]
    }

    /// The wire form of a stored record as `caller` sees it (share records carry `shareInfo`).
    /// `fields` saves decoding the stored JSON when the caller already has the values.
    func render(_ stored: StoredRecord, zone: ZoneRow, caller: String, fields: [String: JSONValue]? = nil) throws -> CloudRecord {
        try render(stored, zone: zone, presentedZoneID: zone.zoneID.presented(to: caller), fields: fields)
    }

    /// `render` with the zone ID as the caller sees it worked out once (for pages of records).
    func render(_ stored: StoredRecord, zone: ZoneRow, presentedZoneID: ZoneID, fields: [String: JSONValue]? = nil) throws -> CloudRecord {
        var record = CloudRecord(recordName: stored.name, zoneID: presentedZoneID,
                                 recordType: stored.type, fields: fields ?? decodeFields(stored.fields),
                                 recordChangeTag: stored.tag,
                                 parent: stored.parent.map { RecordReference(recordName: $0) },
                                 share: stored.share.map { RecordReference(recordName: $0) })
        record.creationDate = stored.created
        record.modificationDate = stored.modified
        record.creatorUserRecordName = stored.creator
        record.lastModifiedUserRecordName = stored.modifier
        if record.isShare { record.shareInfo = try shareInfo(zone: zone, name: stored.name) }
        return record
    }

    /// Writes a record's new version; the superseded one is kept for serverRecordChanged's ancestor.
    func storeRecord(zone: ZoneRow, name: String, type: String, fieldsJSON: String, parent: String?, share: String?,
                     previous: StoredRecord?, user: String) throws -> StoredRecord {
        let seq = nextSeq()
        if let previous, !previous.deleted {
            let body = try render(previous, zone: zone, caller: zone.owner)
            try db.execute("INSERT OR REPLACE INTO record_versions(zone, name, tag, body, superseded, superseded_seq) VALUES (?, ?, ?, ?, ?, ?)",
                           [zone.id, name, previous.tag, try encoder.text(body), now, seq])
        }
        let live = previous.flatMap { $0.deleted ? nil : $0 }
        let stored = StoredRecord(name: name, type: type, fields: fieldsJSON, tag: newTag(), seq: seq, deleted: false,
                                  created: live?.created ?? now, creator: live?.creator ?? user,
                                  modified: now, modifier: user, parent: parent, share: share)
        // Bound one value at a time: a batch writes hundreds of these. A name the zone holds no
        // row of (its writer looked, holding the zone's lock) is a plain insert: SQLite spares it
        // REPLACE's conflict handling and statement journal, and a row there after all would be
        // refused rather than overwritten.
        let insert = try db.cached(previous == nil ? Self.insertRecordSQL : Self.storeRecordSQL)
        try insert.bind(.integer(zone.id), at: 1)
        try insert.bind(.text(name), at: 2)
        try insert.bind(.text(type), at: 3)
        try insert.bind(.text(fieldsJSON), at: 4)
        try insert.bind(.text(stored.tag), at: 5)
        try insert.bind(.integer(seq), at: 6)
        try insert.bind(.real(stored.created), at: 7)
        try insert.bind(.text(stored.creator), at: 8)
        try insert.bind(.real(now), at: 9)
        try insert.bind(.text(user), at: 10)
        try insert.bind(parent.map(SQLValue.text) ?? .null, at: 11)
        try insert.bind(share.map(SQLValue.text) ?? .null, at: 12)
        try insert.runBound()
        CrashPoint.reached("sync.midBatch")
        return stored
    }

    static let storeRecordSQL = """
        INSERT OR REPLACE INTO records(zone, name, type, fields, tag, seq, deleted, created, creator, modified, modifier, parent, share)
        VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)
        """

    static let insertRecordSQL = """
        INSERT INTO records(zone, name, type, fields, tag, seq, deleted, created, creator, modified, modifier, parent, share)
        VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)
        """

    /// Gives a live record a new change tag (a child was saved under it, or its share changed).
    func bumpRecord(zone: ZoneRow, name: String, user: String, share: String?? = .none) throws {
        guard let current = try liveRecord(zone: zone.id, name: name) else { return }
        let newShare: String? = share ?? current.share
        _ = try storeRecord(zone: zone, name: name, type: current.type, fieldsJSON: current.fields ?? "{}",
                            parent: current.parent, share: newShare, previous: current, user: user)
    }

    /// Turns a record into a tombstone (kept for change fetching until the retention drops it).
    /// A tombstone's `share` is the share the record was in, so only that share's participants
    /// hear of the deletion.
    func tombstone(zone: ZoneRow, name: String, user: String) throws {
        let share = try governingShare(zone: zone.id, from: name)
        let seq = nextSeq()
        try db.execute("UPDATE records SET deleted = 1, fields = NULL, tag = ?, seq = ?, modified = ?, modifier = ?, share = ? WHERE zone = ? AND name = ?",
                       [newTag(), seq, now, user, share, zone.id, name])
        try db.execute("DELETE FROM record_versions WHERE zone = ? AND name = ?", [zone.id, name])
    }

    /// The version of a record whose tag was `tag`, if it is still kept and `caller` could have
    /// read it (`mayReadVersion`).
    func ancestor(zone: ZoneRow, name: String, tag: String, caller: String) throws -> CloudRecord? {
        guard let row = try db.query("SELECT body, superseded_seq FROM record_versions WHERE zone = ? AND name = ? AND tag = ?",
                                     [zone.id, name, tag]).first,
              let body = row[0].string,
              var record = try? CloudRecord.read(body),
              try mayReadVersion(supersededAt: row[1].int64 ?? 0, writer: record.lastModifiedUserRecordName, zone: zone, caller: caller)
        else { return nil }
        record.zoneID = zone.zoneID.presented(to: caller)
        return record
    }

    /// Whether `caller` could have read a version written by `writer` that stopped being current
    /// at sequence `superseded`: the owner reads every version; anyone else the versions they
    /// wrote and those still current when their current reading of the zone began
    /// (`readingStart`) or later, never one replaced before it (such as the record's content
    /// before it was shared). A version kept before that sequence was recorded (0) is shown to
    /// the owner and its writer only.
    func mayReadVersion(supersededAt superseded: Int64, writer: String?, zone: ZoneRow, caller: String) throws -> Bool {
        if caller == zone.owner || writer == caller { return true }
        guard superseded > 0 else { return false }
        return superseded > (try readingStart(zone: zone.id, user: caller))
    }

    func liveChildren(zone: Int64, of name: String) throws -> [String] {
        try db.query("SELECT name FROM records WHERE zone = ? AND parent = ? AND deleted = 0", [zone, name]).compactMap { $0[0].string }
    }

    // MARK: Database change log

    /// Records that `zone` changed (or was deleted/purged) for its owner's private database and
    /// for every user who sees it in their shared database, and queues their notices.
    /// `_defaultZone` has no change fetching, so it is never reported.
    func touchZone(_ zone: ZoneRow, kind: String = "changed") throws {
        guard !zone.isDefaultZone else { return }
        let seq = nextSeq()
        try logDatabaseChange(user: zone.owner, scope: .private, zone: zone, kind: kind, seq: seq)
        try notifySubscribers(zone: zone, user: zone.owner, database: .private, seq: seq)
        let readers = try readingUsers(zone: zone.id).filter { $0 != zone.owner }
        let shares = readers.isEmpty || kind != "changed" ? nil : try sharesTouched(zone: zone)
        for user in readers {
            if let shares, try !shares.contains(where: { try sees(share: $0, zone: zone.id, user: user) }) { continue }
            try logDatabaseChange(user: user, scope: .shared, zone: zone, kind: kind == "changed" ? kind : "deleted", seq: seq)
            try notifySubscribers(zone: zone, user: user, database: .shared, seq: seq)
        }
        recordChanges.removeAll { $0.zone == zone.id }
    }

    func logDatabaseChange(user: String, scope: DatabaseScope, zone: ZoneRow, kind: String, seq: Int64) throws {
        try db.execute("""
            INSERT INTO database_changes(user, scope, owner, zone_name, kind, seq, changed, environment) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(environment, user, scope, owner, zone_name) DO UPDATE SET kind = excluded.kind, seq = excluded.seq, changed = excluded.changed
            """, [user, scope.rawValue, zone.owner, zone.name, kind, seq, now, environment.rawValue])
        notices.append(ChangeNotice(user: user, scope: scope, zoneID: zone.zoneID, seq: seq, environment: environment))
    }

    /// The shares this request's record changes in `zone` are in (before and after a move), or
    /// nil when every reader hears of the change: a zone-wide share, or a change of no record
    /// (a share's own record, its participants).
    private func sharesTouched(zone: ZoneRow) throws -> Set<String>? {
        let changes = recordChanges.filter { $0.zone == zone.id }
        guard !changes.isEmpty else { return nil }
        var shares: Set<String> = []
        for change in changes {
            for share in [try change.share ?? governingShare(zone: zone.id, from: change.parent),
                          try change.previousParent.flatMap { try governingShare(zone: zone.id, from: $0) }].compactMap({ $0 }) {
                if share == CloudKitNames.zoneShareName { return nil }
                shares.insert(share)
            }
        }
        return shares
    }

    /// Whether `user` reads the records of `share` (an accepted participation with a permission).
    private func sees(share: String, zone: Int64, user: String) throws -> Bool {
        try participation(zone: zone, share: share, user: user)?.reads ?? false
    }

    /// Users with an accepted participation in any share of the zone.
    /// The users the zone is in the shared database of (`reads(zone:user:)`).
    func readingUsers(zone: Int64) throws -> [String] {
        try db.query("SELECT DISTINCT user FROM participants WHERE zone = ? AND acceptance = '\(ShareAcceptanceStatus.accepted.rawValue)' AND permission != '\(SharePermission.none.rawValue)'", [zone])
            .compactMap { $0[0].string }
    }
}
