import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// The mirror's durable bookkeeping in one store (the repository of its `mirror_*` tables), kept in
/// the store's own SQLite file beside its rows:
///
/// - `mirror_pending`: the outgoing queue (record names, never payloads: docs/RULES.md,
///   mirroring). It is derived from persistent history, which the save writes in its own
///   transaction, by `MirrorMapping.queueHistory`, which moves history after the durable export
///   cursor into the queue and advances the cursor in one transaction. A crash anywhere leaves either the history not yet ingested
///   (it is ingested next time) or both queue and cursor written: nothing is lost or doubled,
///   and the colleague's save path needs no mirror code.
/// - `mirror_meta`: per record, its zone, last known change tag and last known server fields
///   (the ancestor of the next merge), like CKRecord's encoded system fields.
/// - `mirror_fieldtimes`: per record, when and on which device each field was last edited
///   (the latest-edit policy's clock), as the JSON text records carry in `MC_fieldModified`.
/// - `mirror_kv`: the export cursor and the change tokens.
/// - `mirror_unexportable`: shared-store objects in no share zone, which the mirror cannot export.
/// - `mirror_unimportable`: cloud records this store refused (`CoreDataMapping.applyRefusing`).
/// - `mirror_share`: the owner's live share zones, made here or listed by a fetch, and the root
///   records of those made here.
///
/// The mirror's busy bookkeeping transactions (queueing history, building batches, applying
/// verdicts, tokens and metadata after a context save) commit `.deferred`: without waiting for
/// the disk. All of it can be derived again (from history after the cursor they roll back with,
/// or from the cloud by the next send or fetch), so a power loss costs a redo at worst; a
/// process crash (kill -9) loses nothing. So does a fetched page that writes rows and history;
/// its notice to clients waits until the log is synced (`CoreDataMapping.applyPage`).
struct MirrorBookkeeping: BookkeepingTables {
    let database: Database
    let storeName: String
    let scope: StoreScope

    /// This project's bookkeeping field of per-field edit stamps (`FieldStamp`).
    static let fieldTimesField = "MC_fieldModified"

    static func zoneTokenKey(_ zone: ZoneID) -> String { "zoneToken:\(zone.ownerName)/\(zone.zoneName)" }
    static let databaseTokenKey = "databaseToken"
    static let exportCursorKey = "exportCursor"

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

    /// A queue row. Its kind is only ever written from `ChangeKind`: another value means the
    /// row was damaged, an error naming the row rather than a guess at what the change was.
    static func pending(_ row: Row) throws -> Pending {
        let zone = row[4].string.map { ZoneID(zoneName: $0, ownerName: row[5].string ?? ZoneID.defaultOwner) }
        guard let kind = row[3].string.flatMap(ChangeKind.init(rawValue:)) else {
            let found = row[3].string.map { "'\($0)'" } ?? "nothing"
            throw ServiceError(.internalError, "mirror_pending row \(row[0].int64 ?? 0) (record '\(row[1].string ?? "")') holds \(found) as its kind, which is not insert, update or delete: the database is damaged.",
                               details: ["table": "mirror_pending", "seq": .int(Int(row[0].int64 ?? 0)), "column": "kind"])
        }
        return Pending(seq: row[0].int64 ?? 0, uuid: row[1].string ?? "", entity: row[2].string ?? "",
                       kind: kind, zone: zone, changedText: row[6].string ?? "[]",
                       notBefore: row[7].double ?? 0, generation: row[8].int64 ?? 0, primaryKey: row[9].int64)
    }

    static let pendingColumns = "seq, uuid, entity, kind, zone_name, owner_name, changed, not_before, generation, pk"

    /// A due entry with what a send needs of the record besides its row: its metadata (nil:
    /// never saved to the server) and its field stamps' text, read with the entry.
    struct DueEntry {
        var pending: Pending
        var meta: Meta?
        var timesText: String?
        /// The kept server copy carries its move receipt (the record was moved into its zone).
        var movedFromKept = false
    }

    /// Entries due now (not deferred by a retry-after), oldest first, each with its metadata
    /// and stamps: one statement per batch instead of two more per record.
    static let dueEntriesSQL = """
        SELECT \(pendingColumns.split(separator: ",").map { "p." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")),
            m.uuid, m.entity, m.zone_name, m.owner_name, m.change_tag, \(storedTimesSQL),
            json_type(m.server_fields, '$.\(MovedFrom.field)') IS NOT NULL FROM mirror_pending p
        LEFT JOIN mirror_meta m ON m.uuid = p.uuid LEFT JOIN mirror_fieldtimes t ON t.uuid = p.uuid
        WHERE p.not_before <= ? AND p.seq > ? ORDER BY p.seq LIMIT ?
        """

    struct Meta {
        var uuid: String
        var entity: String
        var zone: ZoneID
        var changeTag: String?
        var serverFields: [String: JSONValue]?
    }
}

/// The bookkeeping tables over one store's connection: the engine's `MirrorBookkeeping`, and
/// the mapping's `StoreBookkeeping`, which reads the store's rows besides.
protocol BookkeepingTables {
    var database: Database { get }
    var storeName: String { get }
    var scope: StoreScope { get }
}

extension BookkeepingTables {
    /// The connection for a change to the tables. Only inside a write (`MirrorStore.write`): a
    /// step's bookkeeping commits with the rest of the step or not at all, never one statement
    /// at a time.
    var changing: Database {
        get throws {
            guard database.isInTransaction else {
                throw ServiceError(.internalError, "The mirror changed its bookkeeping in store '\(storeName)' outside a write; nothing was changed.")
            }
            return database
        }
    }

    func createTables() throws { try MirrorTables.create(in: database) }

    // MARK: Key-value (cursor, tokens)

    func value(_ key: String) throws -> String? {
        try database.scalar("SELECT value FROM mirror_kv WHERE key = ?", [key])?.string
    }

    /// The zones' change tokens, by "owner/zone" (`sync.status`).
    func zoneTokens() throws -> [String: String] {
        var tokens: [String: String] = [:]
        for row in try database.query("SELECT key, value FROM mirror_kv WHERE key LIKE 'zoneToken:%'") {
            tokens[String((row[0].string ?? "").dropFirst("zoneToken:".count))] = row[1].string
        }
        return tokens
    }

    func setValue(_ key: String, _ value: String?) throws {
        if let value {
            try changing.execute("INSERT INTO mirror_kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", [key, value])
        } else {
            try changing.execute("DELETE FROM mirror_kv WHERE key = ?", [key])
        }
    }

    // MARK: Pending

    func pending(uuid: String) throws -> MirrorBookkeeping.Pending? {
        try database.query("SELECT \(MirrorBookkeeping.pendingColumns) FROM mirror_pending WHERE uuid = ?", [uuid]).first.map { try MirrorBookkeeping.pending($0) }
    }

    func dueEntries(now: Double, limit: Int, after seq: Int64) throws -> [MirrorBookkeeping.DueEntry] {
        try database.query(MirrorBookkeeping.dueEntriesSQL, [now, seq, limit]).map { row in
            let meta = row[10].string.map { uuid in
                MirrorBookkeeping.Meta(uuid: uuid, entity: row[11].string ?? "", zone: ZoneID(zoneName: row[12].string ?? "", ownerName: row[13].string ?? ""),
                     changeTag: row[14].string, serverFields: nil)
            }
            return MirrorBookkeeping.DueEntry(pending: try MirrorBookkeeping.pending(row), meta: meta, timesText: row[15].string, movedFromKept: row[16].int64 == 1)
        }
    }

    func allPending() throws -> [MirrorBookkeeping.Pending] {
        try database.query("SELECT \(MirrorBookkeeping.pendingColumns) FROM mirror_pending ORDER BY seq").map { try MirrorBookkeeping.pending($0) }
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
        let changedJSON = text ?? JSONWriter.text(strings: union.sorted())
        try changing.execute("""
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
        try changing.cached("""
            INSERT INTO mirror_pending(uuid, entity, kind, zone_name, owner_name, changed, not_before, times, pk)
            SELECT value ->> 0, ?1, 'insert', NULL, NULL, ?2, 0, ?3, value ->> 1 FROM json_each(?4) WHERE true
            ON CONFLICT(uuid) DO UPDATE SET entity = excluded.entity, kind = excluded.kind, zone_name = NULL, owner_name = NULL,
                changed = excluded.changed, not_before = 0, generation = generation + 1, times = excluded.times, pk = excluded.pk
            """).run([entity, changedText, SQLValue(timesText), list])
    }

    func dropPending(_ uuid: String) throws {
        try changing.execute("DELETE FROM mirror_pending WHERE uuid = ?", [uuid])
    }

    /// Removes the entry only if it is still the version a verdict answered (a newer local edit stays queued).
    func dropPending(_ entry: MirrorBookkeeping.Pending) throws {
        // By queue position (the rowid), not through the uuid index: a verdict drops hundreds.
        try changing.execute("DELETE FROM mirror_pending WHERE seq = ? AND uuid = ? AND generation = ?", [entry.seq, entry.uuid, entry.generation])
    }

    func deferEntries(_ uuids: [String], until time: Double) throws {
        for uuid in uuids { try changing.execute("UPDATE mirror_pending SET not_before = ? WHERE uuid = ?", [time, uuid]) }
    }

    // MARK: Record metadata

    /// A record's metadata; its server fields (the next merge's ancestor) only when `withFields`.
    func meta(_ uuid: String, withFields: Bool = false) throws -> MirrorBookkeeping.Meta? {
        let columns = withFields ? "server_fields" : "NULL"
        guard let row = try database.query("SELECT uuid, entity, zone_name, owner_name, change_tag, \(columns) FROM mirror_meta WHERE uuid = ?",
                                           [uuid]).first else { return nil }
        let fields = row[5].string.flatMap { try? JSONParser.parse($0).objectValue }
        return MirrorBookkeeping.Meta(uuid: uuid, entity: row[1].string ?? "", zone: ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? ""),
                    changeTag: row[4].string, serverFields: fields)
    }

    /// Stores a record's metadata. `fieldsText` is the server fields' text when the caller
    /// already has it: a send's verdict (the data fields it sent), a fetch (the record's fields
    /// as received). Kept stamps serve as the record's stamps until a row of its own is written
    /// (`fieldTimesText`); readers of the ancestor strip them.
    func setMeta(_ meta: MirrorBookkeeping.Meta, fieldsText: String? = nil) throws {
        let fields = fieldsText ?? meta.serverFields.map { RecordFields($0).text }
        try changing.execute("""
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
        try changing.execute("DELETE FROM mirror_meta WHERE uuid = ?", [uuid])
        if let stamps { try replaceFieldTimes(uuid, text: stamps) } else { try dropFieldTimes(uuid) }
    }
}
