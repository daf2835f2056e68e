import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// The mirror's durable bookkeeping, kept in each store's own SQLite file beside its rows:
///
/// - `mirror_pending`: the outgoing queue (record names, never payloads: docs/RULES.md, mirroring). It is
///   derived from persistent history, which the save writes in its own transaction, by
///   `ingest`, which moves history after the durable export cursor into the queue and advances
///   the cursor in one transaction. A crash anywhere leaves either the history not yet ingested
///   (it is ingested next time) or both queue and cursor written: nothing is lost or doubled,
///   and the colleague's save path needs no mirror code.
/// - `mirror_meta`: per record, its zone, last known change tag and last known server fields
///   (the ancestor of the next merge), like CKRecord's encoded system fields.
/// - `mirror_fieldtimes`: per record, when and on which device each field was last edited
///   (the latest-edit policy's clock), as the JSON text records carry in `MC_fieldModified`.
/// - `mirror_kv`: the export cursor and the change tokens.
/// - `mirror_unexportable`: seed 002's stray shared-store objects.
/// - `mirror_unimportable`: cloud records this store refused (`CloudMirror.applyRefusing`).
/// - `mirror_share`: the owner's share zones and their root records.
///
/// The mirror's busy bookkeeping transactions (queueing history, building batches, applying
/// verdicts, tokens and metadata after a context save) commit `.deferred`: without waiting for
/// the disk. All of it can be derived again (from history after the cursor they roll back with,
/// or from the cloud by the next send or fetch), so a power loss costs a redo at worst; a
/// process crash (kill -9) loses nothing. So does a fetched page that writes rows and history;
/// its notice to clients waits until the log is synced (`CloudMirror.applyPage`).
struct MirrorState {
    let store: PersistentStore
    private var database: Database { store.database }

    /// This project's bookkeeping field of per-field edit stamps (`FieldStamp`).
    static let fieldTimesField = "MC_fieldModified"

    init(_ store: PersistentStore) { self.store = store }

    func createTables() throws {
        try database.execute("""
            CREATE TABLE IF NOT EXISTS mirror_kv(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_pending(seq INTEGER PRIMARY KEY AUTOINCREMENT, uuid TEXT NOT NULL UNIQUE,
                entity TEXT NOT NULL, kind TEXT NOT NULL, zone_name TEXT, owner_name TEXT, changed TEXT NOT NULL,
                not_before REAL NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0, times TEXT, pk INTEGER);
            CREATE TABLE IF NOT EXISTS mirror_meta(uuid TEXT PRIMARY KEY, entity TEXT NOT NULL, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, change_tag TEXT, server_fields TEXT);
            CREATE TABLE IF NOT EXISTS mirror_fieldtimes(uuid TEXT PRIMARY KEY, times TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_unexportable(uuid TEXT PRIMARY KEY, object_id TEXT NOT NULL, zone TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_unimportable(uuid TEXT NOT NULL, entity TEXT NOT NULL, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, change_tag TEXT, code TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY(uuid, zone_name, owner_name));
            CREATE TABLE IF NOT EXISTS mirror_share(zone_name TEXT PRIMARY KEY, root_uuid TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_deleted(uuid TEXT PRIMARY KEY, zone_name TEXT NOT NULL, owner_name TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_inflight(id INTEGER PRIMARY KEY AUTOINCREMENT, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, names TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_tombstones(uuid TEXT NOT NULL, record_type TEXT NOT NULL, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, PRIMARY KEY(uuid, zone_name, owner_name));
            """)
        try PendingLinks.createTable(in: database)
        // No index on a record's zone: every record synced writes a metadata row (the sending
        // device's verdict, the receiving device's page), and the index was a fifth of that
        // row's cost (~3 µs), paid to speed up what runs once per zone lifetime: a zone's
        // deletion, purge or reset, and a first fetch of a zone (a scan of the table then).
        try database.execute("DROP INDEX IF EXISTS mirror_meta_zone")
        // Refusals kept before a record was named by its zone too (one per record name): another
        // owner's record of the same name is another record, refused or not on its own.
        if try database.scalar("SELECT count(*) FROM pragma_table_info('mirror_unimportable') WHERE pk > 0")?.int ?? 0 < 2 {
            try database.execute("""
                CREATE TABLE mirror_unimportable_keyed(uuid TEXT NOT NULL, entity TEXT NOT NULL, zone_name TEXT NOT NULL,
                    owner_name TEXT NOT NULL, change_tag TEXT, code TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY(uuid, zone_name, owner_name));
                INSERT INTO mirror_unimportable_keyed SELECT uuid, entity, zone_name, owner_name, change_tag, code, message FROM mirror_unimportable;
                DROP TABLE mirror_unimportable;
                ALTER TABLE mirror_unimportable_keyed RENAME TO mirror_unimportable;
                """)
        }
        // Queues written before entries carried a new object's stamps and its row's key.
        if try database.scalar("SELECT 1 FROM pragma_table_info('mirror_pending') WHERE name = 'pk'") == nil {
            try database.execute("ALTER TABLE mirror_pending ADD COLUMN times TEXT; ALTER TABLE mirror_pending ADD COLUMN pk INTEGER")
        }
        // Stores written before field times were one row per record kept a row per field.
        if try database.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'mirror_fieldtime'") != nil {
            try database.execute("""
                INSERT OR REPLACE INTO mirror_fieldtimes(uuid, times)
                    SELECT uuid, json_group_object(field, json_object('device', device, 'time', time)) FROM mirror_fieldtime GROUP BY uuid;
                DROP TABLE mirror_fieldtime;
                """)
        }
    }

    // MARK: Key-value (cursor, tokens)

    func value(_ key: String) throws -> String? {
        try database.scalar("SELECT value FROM mirror_kv WHERE key = ?", [key])?.string
    }

    func setValue(_ key: String, _ value: String?) throws {
        if let value {
            try database.execute("INSERT INTO mirror_kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", [key, value])
        } else {
            try database.execute("DELETE FROM mirror_kv WHERE key = ?", [key])
        }
    }

    /// Keeps a value that can be derived again (a database change token: one lost to a power
    /// cut only means the zones it covered are listed again, and each zone's own token is kept
    /// with its pages), without waiting for the disk, and not at all when it is unchanged.
    /// A fetch saved its database tokens in commits of their own that waited for the disk, two
    /// per automatic pass (the private and the shared database) on the thread applying pages.
    func setDerivableValue(_ key: String, _ value: String?) throws {
        guard try self.value(key) != value else { return }
        if database.isInTransaction { return try setValue(key, value) }
        try database.transaction(commit: .deferred) { try setValue(key, value) }
    }

    static func zoneTokenKey(_ zone: ZoneID) -> String { "zoneToken:\(zone.ownerName)/\(zone.zoneName)" }
    static let databaseTokenKey = "databaseToken"
    static let exportCursorKey = "exportCursor"

    // MARK: Pending

    struct Pending {
        var seq: Int64
        var uuid: String
        var entity: String
        var kind: ChangeKind
        var zone: ZoneID?
        /// The changed fields as stored (a JSON array), parsed only when asked: a send reads
        /// hundreds of entries per batch and needs them only to merge.
        var changedText: String
        var changed: Set<String> {
            Set((try? JSONParser.parse(changedText))?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
        var notBefore: Double
        /// Bumped by every enqueue of the record: a verdict only removes the version it answered.
        var generation: Int64
        /// The row's primary key, when the entry came from history (the row is read by it).
        var primaryKey: Int64?
    }

    private static func pending(_ row: Row) -> Pending {
        let zone = row[4].string.map { ZoneID(zoneName: $0, ownerName: row[5].string ?? ZoneID.defaultOwner) }
        return Pending(seq: row[0].int64 ?? 0, uuid: row[1].string ?? "", entity: row[2].string ?? "",
                       kind: ChangeKind(rawValue: row[3].string ?? "") ?? .update, zone: zone, changedText: row[6].string ?? "[]",
                       notBefore: row[7].double ?? 0, generation: row[8].int64 ?? 0, primaryKey: row[9].int64)
    }

    private static let pendingColumns = "seq, uuid, entity, kind, zone_name, owner_name, changed, not_before, generation, pk"

    func pending(uuid: String) throws -> Pending? {
        try database.query("SELECT \(Self.pendingColumns) FROM mirror_pending WHERE uuid = ?", [uuid]).first.map(Self.pending)
    }

    /// A due entry with what a send needs of the record besides its row: its metadata (nil:
    /// never saved to the server) and its field stamps' text, read with the entry.
    struct DueEntry {
        var pending: Pending
        var meta: Meta?
        var timesText: String?
        /// The kept server copy carries `MC_movedFrom` (the record was moved into its zone).
        var movedFromKept = false
    }

    /// Entries due now (not deferred by a retry-after), oldest first, each with its metadata
    /// and stamps: one statement per batch instead of two more per record.
    private static let dueEntriesSQL = """
        SELECT \(pendingColumns.split(separator: ",").map { "p." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")),
            m.uuid, m.entity, m.zone_name, m.owner_name, m.change_tag, \(storedTimesSQL),
            json_type(m.server_fields, '$.\(MovedFrom.field)') IS NOT NULL FROM mirror_pending p
        LEFT JOIN mirror_meta m ON m.uuid = p.uuid LEFT JOIN mirror_fieldtimes t ON t.uuid = p.uuid
        WHERE p.not_before <= ? AND p.seq > ? ORDER BY p.seq LIMIT ?
        """

    func dueEntries(now: Double, limit: Int, after seq: Int64) throws -> [DueEntry] {
        try database.query(Self.dueEntriesSQL, [now, seq, limit]).map { row in
            let meta = row[10].string.map { uuid in
                Meta(uuid: uuid, entity: row[11].string ?? "", zone: ZoneID(zoneName: row[12].string ?? "", ownerName: row[13].string ?? ""),
                     changeTag: row[14].string, serverFields: nil)
            }
            return DueEntry(pending: Self.pending(row), meta: meta, timesText: row[15].string, movedFromKept: row[16].int64 == 1)
        }
    }

    func allPending() throws -> [Pending] {
        try database.query("SELECT \(Self.pendingColumns) FROM mirror_pending ORDER BY seq").map(Self.pending)
    }

    func pendingCount() throws -> Int { try database.scalar("SELECT count(*) FROM mirror_pending")?.int ?? 0 }

    /// The earliest retry-after moment among deferred entries, if any.
    func earliestDeferral(now: Double) throws -> Double? {
        try database.scalar("SELECT min(not_before) FROM mirror_pending WHERE not_before > ?", [now])?.double
    }

    /// `new`: the change is a new object's insert, so there is no earlier entry to merge with
    /// (its lookup is skipped; were there one, the insert's fields would replace it).
    /// `changedText`: `changed` already as its sorted JSON array (a new object's, from a cache).
    /// `timesText`: a new object's stamps, kept in its entry rather than a stamps row of its own
    /// (until a later edit writes one; once sent, the record's kept server fields hold them).
    /// `primaryKey`: the row's key, when known (the batch reads the row by it).
    func enqueue(uuid: String, entity: String, kind: ChangeKind, zone: ZoneID?, changed: Set<String>, new: Bool = false,
                 changedText: String? = nil, timesText: String? = nil, primaryKey: Int64? = nil) throws {
        var union = changed
        var newKind = kind
        var text = changedText
        if !new, let existing = try pending(uuid: uuid) {
            if kind != .delete { union.formUnion(existing.changed) }
            // An insert still pending stays an insert (the record is new to the server) unless deleted.
            if existing.kind == .insert, kind == .update { newKind = .insert }
            text = nil
        }
        let changedJSON = text ?? PersistentStore.jsonArray(union.sorted())
        try database.execute("""
            INSERT INTO mirror_pending(uuid, entity, kind, zone_name, owner_name, changed, not_before, times, pk) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)
            ON CONFLICT(uuid) DO UPDATE SET entity = excluded.entity, kind = excluded.kind, zone_name = excluded.zone_name,
                owner_name = excluded.owner_name, changed = excluded.changed, not_before = 0, generation = generation + 1,
                times = iif(?9, excluded.times, coalesce(excluded.times, times)), pk = coalesce(excluded.pk, pk)
            """, [uuid, entity, newKind.rawValue, SQLValue(zone?.zoneName), SQLValue(zone?.ownerName), changedJSON, SQLValue(timesText),
                  primaryKey.map { SQLValue.integer($0) } ?? .null, new ? 1 : 0])
    }

    /// Queues new objects of one entity that share their changed fields and stamps (a bulk
    /// save's inserts), as `enqueue(…, new: true, …)` does each, in one statement: the queue's
    /// positions follow `objects`' order. A statement per object was most of queueing history.
    func enqueueNewObjects(entity: String, objects: [(uuid: String, primaryKey: Int64)], changedText: String, timesText: String?) throws {
        guard !objects.isEmpty else { return }
        var list = "["
        for (index, object) in objects.enumerated() {
            if index > 0 { list += "," }
            list += "["
            JSONWriter.appendString(object.uuid, to: &list)
            list += "," + String(object.primaryKey) + "]"
        }
        list += "]"
        // `WHERE true`: an upsert after a SELECT needs a WHERE to parse (SQLite's rule).
        try database.cached("""
            INSERT INTO mirror_pending(uuid, entity, kind, zone_name, owner_name, changed, not_before, times, pk)
            SELECT value ->> 0, ?1, 'insert', NULL, NULL, ?2, 0, ?3, value ->> 1 FROM json_each(?4) WHERE true
            ON CONFLICT(uuid) DO UPDATE SET entity = excluded.entity, kind = excluded.kind, zone_name = NULL, owner_name = NULL,
                changed = excluded.changed, not_before = 0, generation = generation + 1, times = excluded.times, pk = excluded.pk
            """).run([entity, changedText, SQLValue(timesText), list])
    }

    func dropPending(_ uuid: String) throws {
        try database.execute("DELETE FROM mirror_pending WHERE uuid = ?", [uuid])
    }

    /// Removes the entry only if it is still the version a verdict answered (a newer local edit stays queued).
    func dropPending(_ entry: Pending) throws {
        // By queue position (the rowid), not through the uuid index: a verdict drops hundreds.
        try database.execute("DELETE FROM mirror_pending WHERE seq = ? AND uuid = ? AND generation = ?", [entry.seq, entry.uuid, entry.generation])
    }

    func deferEntries(_ uuids: [String], until time: Double) throws {
        for uuid in uuids { try database.execute("UPDATE mirror_pending SET not_before = ? WHERE uuid = ?", [time, uuid]) }
    }

    // MARK: Record metadata

    struct Meta {
        var uuid: String
        var entity: String
        var zone: ZoneID
        var changeTag: String?
        var serverFields: [String: JSONValue]?
    }

    /// A record's metadata; its server fields (the next merge's ancestor) only when `withFields`.
    func meta(_ uuid: String, withFields: Bool = false) throws -> Meta? {
        let columns = withFields ? "server_fields" : "NULL"
        guard let row = try database.query("SELECT uuid, entity, zone_name, owner_name, change_tag, \(columns) FROM mirror_meta WHERE uuid = ?",
                                           [uuid]).first else { return nil }
        let fields = row[5].string.flatMap { try? JSONParser.parse($0).objectValue }
        return Meta(uuid: uuid, entity: row[1].string ?? "", zone: ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? ""),
                    changeTag: row[4].string, serverFields: fields)
    }

    /// Stores a record's metadata. `fieldsText` is the server fields' text when the caller
    /// already has it: a send's verdict (the data fields it sent), a fetch (the record's fields
    /// as received). Kept stamps serve as the record's stamps until a row of its own is written
    /// (`fieldTimesText`); readers of the ancestor strip them.
    func setMeta(_ meta: Meta, fieldsText: String? = nil) throws {
        let fields = fieldsText ?? meta.serverFields.map { RecordFields($0).text }
        try database.execute("""
            INSERT INTO mirror_meta(uuid, entity, zone_name, owner_name, change_tag, server_fields) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(uuid) DO UPDATE SET entity = excluded.entity, zone_name = excluded.zone_name, owner_name = excluded.owner_name,
                change_tag = excluded.change_tag, server_fields = excluded.server_fields
            """, [meta.uuid, meta.entity, meta.zone.zoneName, meta.zone.ownerName, SQLValue(meta.changeTag), SQLValue(fields)])
    }

    /// The server's copy of a record after a save that carried only some keys (`sentText`):
    /// the kept copy with each sent key written over it and each null removed, as the server
    /// applies it.
    func serverFields(_ uuid: String, applying sentText: String?) throws -> String? {
        guard let sentText, let sent = try JSONParser.parse(sentText).objectValue else { return sentText }
        var fields = try meta(uuid, withFields: true)?.serverFields ?? [:]
        for (key, value) in sent { fields[key] = value.isNull ? nil : value }
        return RecordFields(fields).text
    }

    /// Keeps `record` as the server's copy of the record `uuid` (its own name unless given) of
    /// `entity`: its zone (unless `zone` says otherwise), its tag and its fields (as the text
    /// received, when it came with one: no tree is made of it).
    func setMeta(serverCopy record: CloudRecord, entity: String, uuid: String? = nil, zone: ZoneID? = nil) throws {
        try setMeta(.init(uuid: uuid ?? record.recordName, entity: entity, zone: zone ?? record.zoneID, changeTag: record.recordChangeTag,
                          serverFields: record.fieldsText == nil ? record.fields : nil), fieldsText: record.fieldsText)
    }

    /// The server no longer has the record but a local edit re-creates it (the resurrect delete
    /// policy): its server copy is forgotten; its stamps, which may have lived in that copy or in
    /// its queue entry, are kept as a stamps row for the re-created record.
    func forgetServerCopy(_ uuid: String) throws {
        let stamps = try fieldTimesText(uuid)
        try database.execute("DELETE FROM mirror_meta WHERE uuid = ?", [uuid])
        if let stamps { try replaceFieldTimes(uuid, text: stamps) } else { try dropFieldTimes(uuid) }
    }

    // MARK: Creates whose answer is outstanding

    /// Records a batch's creates in one zone (records sent without a change tag, each with the
    /// queue version it carries) before the batch goes out, in the transaction that builds it.
    /// Until the batch's verdict is applied (which drops the row) the server may hold them
    /// without this device knowing: a send whose answer was lost, or a device killed before
    /// applying it. Returns the row's id.
    func recordCreatesInFlight(_ entries: [Pending], zone: ZoneID) throws -> Int64 {
        var text = "["
        for (index, entry) in entries.enumerated() {
            if index > 0 { text += "," }
            text += "["
            JSONWriter.appendString(entry.uuid, to: &text)
            text += ",\(entry.seq),\(entry.generation)]"
        }
        try database.execute("INSERT INTO mirror_inflight(zone_name, owner_name, names) VALUES (?, ?, ?)",
                             [zone.zoneName, zone.ownerName, text + "]"])
        return database.lastInsertRowID
    }

    func dropCreatesInFlight(_ ids: [Int64]) throws {
        for id in ids { try database.execute("DELETE FROM mirror_inflight WHERE id = ?", [id]) }
    }

    /// One batch's creates in one zone: each record's name and the queue version it carried.
    struct CreatesInFlight {
        var id: Int64
        var zone: ZoneID
        var entries: [(name: String, seq: Int64, generation: Int64)]
    }

    /// Creates recorded by sends that never applied their answer.
    func createsInFlight() throws -> [CreatesInFlight] {
        try database.query("SELECT id, zone_name, owner_name, names FROM mirror_inflight ORDER BY id").compactMap { row -> CreatesInFlight? in
            guard let id = row[0].int64, let zone = row[1].string, let owner = row[2].string, let names = row[3].string,
                  let list = try? JSONParser.parse(names).arrayValue else { return nil }
            let entries = list.compactMap { item -> (name: String, seq: Int64, generation: Int64)? in
                guard let parts = item.arrayValue, parts.count == 3, let name = parts[0].stringValue, let seq = parts[1].intValue,
                      let generation = parts[2].intValue else { return nil }
                return (name, Int64(seq), Int64(generation))
            }
            return CreatesInFlight(id: id, zone: ZoneID(zoneName: zone, ownerName: owner), entries: entries)
        }
    }

    // MARK: Records this device deleted

    /// Remembers that this device deleted the record `uuid` in `zone` and the server took the
    /// delete. Another device may have moved the record to another zone first (sharing its
    /// session): the delete then found only the tombstone the move left, and the record comes
    /// back from its new zone, which `deletedHere` tells. (Back in the same zone it was
    /// re-created, by a device whose delete policy is resurrect, and is welcome.)
    func rememberDeleted(_ uuid: String, zone: ZoneID) throws {
        try database.execute("INSERT OR REPLACE INTO mirror_deleted(uuid, zone_name, owner_name) VALUES (?, ?, ?)",
                             [uuid, zone.zoneName, zone.ownerName])
    }

    var rememberedDeletes: Int { get throws { try database.scalar("SELECT count(*) FROM mirror_deleted")?.int ?? 0 } }
    var heldTombstoneCount: Int { get throws { try database.scalar("SELECT count(*) FROM mirror_tombstones")?.int ?? 0 } }

    /// The zones this device deleted `uuids` in (`rememberDeleted`), by uuid.
    func deletedHere(_ uuids: [String]) throws -> [String: ZoneID] {
        guard !uuids.isEmpty, try database.scalar("SELECT 1 FROM mirror_deleted LIMIT 1") != nil else { return [:] }
        // One statement for a page's names, each looked up in the table's key.
        var found: [String: ZoneID] = [:]
        for row in try database.query("SELECT uuid, zone_name, owner_name FROM mirror_deleted WHERE uuid IN (SELECT value FROM json_each(?))",
                                      [PersistentStore.jsonArray(uuids)]) {
            if let uuid = row[0].string { found[uuid] = ZoneID(zoneName: row[1].string ?? "", ownerName: row[2].string ?? "") }
        }
        return found
    }

    // MARK: Tombstones held until the fetch's end

    /// Keeps a zone's deletions until every changed zone of the fetch has been applied: a record
    /// moved into another zone (a share) leaves a tombstone in its old zone, and applied first
    /// that tombstone would delete the object and, by its delete rules, children the move
    /// carried along (which would then be deleted in the cloud too). Kept in the page's
    /// transaction, with its token: a crash before they are applied loses none.
    func holdTombstones(_ deleted: [(String, String)], zone: ZoneID) throws {
        for (uuid, recordType) in deleted {
            try database.execute("INSERT OR REPLACE INTO mirror_tombstones(uuid, record_type, zone_name, owner_name) VALUES (?, ?, ?, ?)",
                                 [uuid, recordType, zone.zoneName, zone.ownerName])
        }
    }

    /// The held tombstones by zone, in the order they came.
    func heldTombstones() throws -> [(zone: ZoneID, deleted: [(String, String)])] {
        var byZone: [ZoneID: [(String, String)]] = [:]
        var order: [ZoneID] = []
        for row in try database.query("SELECT uuid, record_type, zone_name, owner_name FROM mirror_tombstones ORDER BY rowid") {
            let zone = ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? "")
            if byZone[zone] == nil { order.append(zone) }
            byZone[zone, default: []].append((row[0].string ?? "", row[1].string ?? ""))
        }
        return order.map { ($0, byZone[$0] ?? []) }
    }

    func dropTombstones(zone: ZoneID) throws {
        try database.execute("DELETE FROM mirror_tombstones WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName])
    }

    /// Drops the held tombstones of records a later page brought back into the same zone (a
    /// record moved away and back between two rounds of one fetch): the change is the newer.
    func dropTombstones(_ uuids: [String], zone: ZoneID) throws {
        guard !uuids.isEmpty, try holdsTombstones else { return }
        for uuid in uuids {
            try database.execute("DELETE FROM mirror_tombstones WHERE uuid = ? AND zone_name = ? AND owner_name = ?",
                                 [uuid, zone.zoneName, zone.ownerName])
        }
    }

    var holdsTombstones: Bool {
        get throws { try database.scalar("SELECT 1 FROM mirror_tombstones LIMIT 1") != nil }
    }

    /// Whether this store knows a zone besides Core Data's (a share zone, now or once): only
    /// then can a record's zone differ from its parent's.
    var knowsOtherZones: Bool {
        get throws {
            try database.scalar("SELECT 1 FROM mirror_kv WHERE key LIKE 'zoneToken:%' AND key NOT LIKE ? LIMIT 1",
                                ["%/" + ZoneID.coreDataZoneName]) != nil || database.scalar("SELECT 1 FROM mirror_share LIMIT 1") != nil
        }
    }

    func dropMeta(_ uuid: String) throws {
        try database.execute("DELETE FROM mirror_meta WHERE uuid = ?", [uuid])
        try database.execute("DELETE FROM mirror_fieldtimes WHERE uuid = ?", [uuid])
    }

    func metas(inZone zone: ZoneID) throws -> [Meta] {
        try database.query("SELECT uuid FROM mirror_meta WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName])
            .compactMap { $0[0].string }.compactMap { try meta($0, withFields: true) }
    }

    /// The records this device knows in `zone` (name and entity).
    func recordNames(inZone zone: ZoneID) throws -> [(uuid: String, entity: String)] {
        try database.query("SELECT uuid, entity FROM mirror_meta WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName])
            .compactMap { row in row[0].string.map { ($0, row[1].string ?? "") } }
    }

    /// Whether this device knows any record of `zone`.
    func knowsRecords(inZone zone: ZoneID) throws -> Bool {
        try database.scalar("SELECT 1 FROM mirror_meta WHERE zone_name = ? AND owner_name = ? LIMIT 1", [zone.zoneName, zone.ownerName]) != nil
    }

    /// The zones this store holds data of: record metadata's zones, and the shared store's share zones.
    func knownZones() throws -> Set<ZoneID> {
        var zones = Set(try database.query("SELECT DISTINCT zone_name, owner_name FROM mirror_meta").map {
            ZoneID(zoneName: $0[0].string ?? "", ownerName: $0[1].string ?? "")
        })
        if store.scope == .shared {
            for row in try database.query("SELECT zone_name, owner_name FROM z_share") {
                zones.insert(ZoneID(zoneName: row[0].string ?? "", ownerName: row[1].string ?? ""))
            }
        }
        return zones
    }

    // MARK: Field times

    /// A record's per-field edit stamps: one row per record holding the JSON text the record
    /// carries as `MC_fieldModified` (a row per field cost a statement per field per record).
    func fieldTimes(_ uuid: String) throws -> [String: FieldStamp] {
        FieldStamp.decode(try fieldTimesText(uuid))
    }

    /// A record's stamps: its stamps row, once one is written (a local edit, a merge); before
    /// that, a new object queued and not sent yet has them in its queue entry, and a record
    /// imported or sent (and not edited here since) has those of the server fields kept for it.
    /// A row written per record imported was a twenty-fifth of applying one, and per record
    /// queued a twentieth of sending one.
    static let storedTimesSQL = "coalesce(t.times, p.times, json_extract(m.server_fields, '$.\(fieldTimesField).value'))"

    func fieldTimesText(_ uuid: String) throws -> String? {
        try database.scalar("""
            SELECT \(Self.storedTimesSQL) FROM (SELECT ? AS uuid) k
            LEFT JOIN mirror_fieldtimes t ON t.uuid = k.uuid LEFT JOIN mirror_pending p ON p.uuid = k.uuid
            LEFT JOIN mirror_meta m ON m.uuid = k.uuid
            """, [uuid])?.string
    }

    /// Sets the stamps of the fields in `times`; the record's other fields keep theirs.
    func setFieldTimes(_ uuid: String, _ times: [String: FieldStamp]) throws {
        guard !times.isEmpty else { return }
        var merged = try fieldTimes(uuid)
        for (field, stamp) in times { merged[field] = stamp }
        try database.execute("INSERT INTO mirror_fieldtimes(uuid, times) VALUES (?, ?) ON CONFLICT(uuid) DO UPDATE SET times = excluded.times",
                             [uuid, FieldStamp.encode(merged)])
    }

    func dropFieldTimes(_ uuid: String) throws {
        try database.execute("DELETE FROM mirror_fieldtimes WHERE uuid = ?", [uuid])
    }

    /// Drops the stamps rows of `uuids` in one statement (a page of imports or a bulk save's
    /// new objects have few or none; none at all when no record has a row).
    func dropFieldTimes(_ uuids: [String]) throws {
        guard !uuids.isEmpty, try database.scalar("SELECT 1 FROM mirror_fieldtimes LIMIT 1") != nil else { return }
        try forRows(of: uuids, "DELETE FROM mirror_fieldtimes WHERE uuid IN (SELECT value FROM json_each(?))") { _ in }
    }

    /// Replaces a record's stamps with `text` (an `MC_fieldModified` text, kept as it is).
    func replaceFieldTimes(_ uuid: String, text: String) throws {
        try database.execute("INSERT INTO mirror_fieldtimes(uuid, times) VALUES (?, ?) ON CONFLICT(uuid) DO UPDATE SET times = excluded.times",
                             [uuid, text])
    }

    // MARK: Rows by record name

    /// The primary key of the row of `entity` whose uuid is `uuid`.
    func primaryKey(entity: String, uuid: String) throws -> Int64? {
        guard store.holds(entity) else { return nil }
        return try database.scalar("SELECT z_pk FROM \(PersistentStore.table(entity)) WHERE z_uuid = ?", [uuid])?.int64
    }

    /// `body` over the rows of `sql` for `uuids`, which it names as one JSON array
    /// (`IN (SELECT value FROM json_each(?))`): one cached statement for any number of them.
    /// A statement with a mark per uuid (`IN (?,?,…)`) had to be prepared for each page's size,
    /// and preparing it cost more than the lookups it made (a page of 400 records paid ~1.3 µs
    /// per uuid for each of its three lookups).
    private func forRows(of uuids: [String], _ sql: String, _ body: (Row) -> Void) throws {
        guard !uuids.isEmpty else { return }
        for row in try database.query(sql, [PersistentStore.jsonArray(uuids)]) { body(row) }
    }

    /// Whether `table`'s indexed `column` may hold any of `names`: not when all it holds sorts
    /// before the least of them (bytewise, as SQLite compares text), one index probe. A page of
    /// records new to this device (time-ordered names, made after all it knows) then skips its
    /// lookups: they were a tenth of applying such a page.
    private func mayHold(_ names: [String], table: String, column: String) throws -> Bool {
        guard let least = SQLValue.leastText(names) else { return false }
        return try database.scalar("SELECT 1 FROM \(table) WHERE \(column) >= ? LIMIT 1", [least]) != nil
    }

    /// The metadata (without server fields) and queue entries of `uuids`, two statements for a
    /// page of records instead of two per record.
    func metaAndPending(_ uuids: [String]) throws -> (meta: [String: Meta], pending: [String: Pending]) {
        var metas: [String: Meta] = [:], pendings: [String: Pending] = [:]
        if try mayHold(uuids, table: "mirror_meta", column: "uuid") {
            try forRows(of: uuids, "SELECT uuid, entity, zone_name, owner_name, change_tag FROM mirror_meta WHERE uuid IN (SELECT value FROM json_each(?))") { row in
                guard let uuid = row[0].string else { return }
                metas[uuid] = Meta(uuid: uuid, entity: row[1].string ?? "", zone: ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? ""),
                                   changeTag: row[4].string, serverFields: nil)
            }
        }
        guard try mayHold(uuids, table: "mirror_pending", column: "uuid") else { return (metas, pendings) }
        try forRows(of: uuids, "SELECT \(Self.pendingColumns) FROM mirror_pending WHERE uuid IN (SELECT value FROM json_each(?))") { row in
            let entry = Self.pending(row)
            pendings[entry.uuid] = entry
        }
        return (metas, pendings)
    }

    /// The primary keys of the rows of `entity` among `uuids`, one statement for a whole page
    /// (a statement per record was a twentieth of applying one).
    func primaryKeys(entity: String, uuids: [String]) throws -> [String: Int64] {
        guard store.holds(entity), !uuids.isEmpty, try mayHold(uuids, table: PersistentStore.table(entity), column: "z_uuid") else { return [:] }
        var keys: [String: Int64] = [:]
        try forRows(of: uuids, "SELECT z_uuid, z_pk FROM \(PersistentStore.table(entity)) WHERE z_uuid IN (SELECT value FROM json_each(?))") { row in
            if let uuid = row[0].string, let key = row[1].int64 { keys[uuid] = key }
        }
        return keys
    }

    func uuid(entity: String, primaryKey: Int64) throws -> String? {
        guard store.holds(entity) else { return nil }
        return try database.scalar("SELECT z_uuid FROM \(PersistentStore.table(entity)) WHERE z_pk = ?", [primaryKey])?.string
    }

    /// The share zone a shared-store row keeps as `zoneKey`, when the store has that share's
    /// metadata (a zone it was never given is no share of this user's: seed 002's fault).
    func shareZone(key zoneKey: String) throws -> ZoneID? {
        guard let zone = ZoneID(key: zoneKey),
              try database.scalar("SELECT 1 FROM z_share WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName]) != nil else { return nil }
        return zone
    }

    /// The zone the shared-store row of `entity` named `uuid` lives in (nil: no such row, or
    /// not a shared-store row).
    func rowZone(entity: EntityDescription, uuid: String) throws -> ZoneID? {
        guard store.scope == .shared, store.holds(entity.name) else { return nil }
        return try store.read(entity, uuid: uuid)?.zone.flatMap { ZoneID(key: $0) }
    }

    // MARK: Unexportable (seed 002)

    func markUnexportable(uuid: String, objectID: String, zone: String) throws -> Bool {
        try database.execute("INSERT OR IGNORE INTO mirror_unexportable(uuid, object_id, zone) VALUES (?, ?, ?)", [uuid, objectID, zone])
        return database.changes == 1
    }

    func unexportable() throws -> [String] {
        try database.query("SELECT object_id FROM mirror_unexportable ORDER BY object_id").compactMap { $0[0].string }
    }

    func clearUnexportable(_ uuid: String) throws {
        try database.execute("DELETE FROM mirror_unexportable WHERE uuid = ?", [uuid])
    }

    // MARK: Unimportable records

    /// A cloud record the store refused, as `sync.status` lists it.
    struct Unimportable: Codable, Sendable, Equatable {
        var recordName: String
        var entity: String
        var zone: String
        var recordChangeTag: String?
        var code: String
        var message: String
    }

    /// Returns false when that version of the record was already refused (nothing new to tell).
    @discardableResult
    func markUnimportable(_ uuid: String, entity: String, zone: ZoneID, tag: String?, error: WireError) throws -> Bool {
        if let known = try database.query("SELECT change_tag, code FROM mirror_unimportable WHERE uuid = ? AND zone_name = ? AND owner_name = ?",
                                          [uuid, zone.zoneName, zone.ownerName]).first,
           known[0].string == tag, known[1].string == error.code.rawValue {
            return false
        }
        try database.execute("""
            INSERT OR REPLACE INTO mirror_unimportable(uuid, entity, zone_name, owner_name, change_tag, code, message)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [uuid, entity, zone.zoneName, zone.ownerName, SQLValue(tag), error.code.rawValue, error.message])
        return true
    }

    /// Forgets refusals of these records of `zone` (a later version of each was applied, or it
    /// was deleted); returns those it forgot.
    @discardableResult
    func clearUnimportable(_ uuids: [String], zone: ZoneID) throws -> [String] {
        guard !uuids.isEmpty, try database.scalar("SELECT 1 FROM mirror_unimportable LIMIT 1") != nil else { return [] }
        var cleared: [String] = []
        for uuid in uuids {
            try database.execute("DELETE FROM mirror_unimportable WHERE uuid = ? AND zone_name = ? AND owner_name = ?",
                                 [uuid, zone.zoneName, zone.ownerName])
            if database.changes > 0 { cleared.append(uuid) }
        }
        return cleared
    }

    /// Forgets the refusals of a zone's records (the zone left this device).
    func dropUnimportable(zone: ZoneID) throws {
        try database.execute("DELETE FROM mirror_unimportable WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName])
    }

    func unimportable() throws -> [Unimportable] {
        try database.query("SELECT uuid, entity, zone_name, owner_name, change_tag, code, message FROM mirror_unimportable ORDER BY uuid").map { row in
            Unimportable(recordName: row[0].string ?? "", entity: row[1].string ?? "",
                         zone: ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? "").key,
                         recordChangeTag: row[4].string, code: row[5].string ?? "", message: row[6].string ?? "")
        }
    }

    // MARK: Owner's shares

    func setShareRoot(zone: String, root: String) throws {
        try database.execute("INSERT OR REPLACE INTO mirror_share(zone_name, root_uuid) VALUES (?, ?)", [zone, root])
    }

    func shareZone(ofRoot uuid: String) throws -> String? {
        try database.scalar("SELECT zone_name FROM mirror_share WHERE root_uuid = ?", [uuid])?.string
    }

    func dropShare(zone: String) throws {
        try database.execute("DELETE FROM mirror_share WHERE zone_name = ?", [zone])
    }
}

/// A zone as a shared-store row keeps it (`z_zone`): `owner/zoneName`, the owner
/// `__defaultOwner__` for the user's own zones.
extension ZoneID {
    /// Owner names never hold a `/` (the cloud refuses such user names), so the first one splits
    /// the key.
    var key: String { "\(ownerName)/\(zoneName)" }

    init?(key: String) {
        guard let slash = key.firstIndex(of: "/") else { return nil }
        self.init(zoneName: String(key[key.index(after: slash)...]), ownerName: String(key[..<slash]))
    }
}

/// When and where a field was last edited.
struct FieldStamp: Codable, Sendable, Hashable {
    var time: Double
    var device: String

    /// The `MC_fieldModified` text: the fields grouped by stamp, groups by time then device,
    /// `[{"device":"A","fields":["CD_id","CD_note"],"time":1780000000.5}]`. A record's fields
    /// mostly share one stamp (the insert, or one edit), so this is a third of a
    /// stamp-per-field object's size, and the stamps are half of a CareEvent record.
    static func encode(_ times: [String: FieldStamp]) -> String {
        var groups: [FieldStamp: [String]] = [:]
        for (name, stamp) in times { groups[stamp, default: []].append(name) }
        var text = "["
        for (index, stamp) in groups.keys.sorted(by: { $0.time != $1.time ? $0.time < $1.time : $0.device < $1.device }).enumerated() {
            if index > 0 { text += "," }
            text += "{\"device\":"
            JSONWriter.appendString(stamp.device, to: &text)
            text += ",\"fields\":["
            for (position, name) in groups[stamp]!.sorted().enumerated() {
                if position > 0 { text += "," }
                JSONWriter.appendString(name, to: &text)
            }
            text += "],\"time\":"
            JSONText.write(.double(stamp.time), into: &text)
            text += "}"
        }
        return text + "]"
    }

    /// The text of `fields` (sorted) all stamped `stamp`: one group, as `encode` writes it.
    static func encode(_ fields: [String], _ stamp: FieldStamp) -> String {
        var text = "[{\"device\":"
        JSONWriter.appendString(stamp.device, to: &text)
        text += ",\"fields\":["
        for (position, name) in fields.enumerated() {
            if position > 0 { text += "," }
            JSONWriter.appendString(name, to: &text)
        }
        text += "],\"time\":"
        JSONText.write(.double(stamp.time), into: &text)
        return text + "}]"
    }

    /// The stamps in such a text, or in the earlier stamp-per-field object
    /// (`{"CD_note":{"device":"A","time":1780000000.5}}`, still in stores and records written
    /// before); entries that are not stamps are skipped.
    static func decode(_ text: String?) -> [String: FieldStamp] {
        guard let text, let parsed = try? JSONParser.parse(text) else { return [:] }
        var times: [String: FieldStamp] = [:]
        switch parsed {
        case let .array(groups):
            for group in groups {
                guard let time = group["time"]?.doubleValue, let device = group["device"]?.stringValue,
                      let names = group["fields"]?.arrayValue else { continue }
                for name in names { if let name = name.stringValue { times[name] = FieldStamp(time: time, device: device) } }
            }
        case let .object(members):
            for (name, value) in members {
                guard let time = value["time"]?.doubleValue, let device = value["device"]?.stringValue else { continue }
                times[name] = FieldStamp(time: time, device: device)
            }
        default: break
        }
        return times
    }

    /// Whether a stamps text holds no stamps (either form).
    static func isEmptyText(_ text: String) -> Bool { text == "[]" || text == "{}" }

    /// Whether this edit is later than `other` (equal times: the greater device name).
    func isLater(than other: FieldStamp) -> Bool {
        time != other.time ? time > other.time : device > other.device
    }
}
