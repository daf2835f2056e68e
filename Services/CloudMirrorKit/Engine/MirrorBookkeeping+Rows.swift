import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// Per-field edit stamps, rows found by record name, records that cannot go out or come in,
/// and the owner's share roots.
extension MirrorBookkeeping {
    /// A record's stamps: its stamps row, once one is written (a local edit, a merge); before
    /// that, a new object queued and not sent yet has them in its queue entry, and a record
    /// imported or sent (and not edited here since) has those of the server fields kept for it.
    /// A row written per record imported was a twenty-fifth of applying one, and per record
    /// queued a twentieth of sending one.
    static let storedTimesSQL = "coalesce(t.times, p.times, json_extract(m.server_fields, '$.\(fieldTimesField).value'))"

    /// A cloud record the store refused, as `sync.status` lists it.
    typealias Unimportable = SyncStatus.Unimportable
}

extension BookkeepingTables {
    // MARK: Field times

    /// A record's per-field edit stamps: one row per record holding the JSON text the record
    /// carries as `MC_fieldModified` (a row per field cost a statement per field per record).
    func fieldTimes(_ uuid: String) throws -> [String: FieldStamp] {
        FieldStamp.decode(try fieldTimesText(uuid))
    }

    func fieldTimesText(_ uuid: String) throws -> String? {
        try database.scalar("""
            SELECT \(MirrorBookkeeping.storedTimesSQL) FROM (SELECT ? AS uuid) k
            LEFT JOIN mirror_fieldtimes t ON t.uuid = k.uuid LEFT JOIN mirror_pending p ON p.uuid = k.uuid
            LEFT JOIN mirror_meta m ON m.uuid = k.uuid
            """, [uuid])?.string
    }

    /// Sets the stamps of the fields in `times`; the record's other fields keep theirs.
    func setFieldTimes(_ uuid: String, _ times: [String: FieldStamp]) throws {
        guard !times.isEmpty else { return }
        var merged = try fieldTimes(uuid)
        for (field, stamp) in times { merged[field] = stamp }
        try changing.execute("INSERT INTO mirror_fieldtimes(uuid, times) VALUES (?, ?) ON CONFLICT(uuid) DO UPDATE SET times = excluded.times",
                             [uuid, FieldStamp.encode(merged)])
    }

    func dropFieldTimes(_ uuid: String) throws {
        try changing.execute("DELETE FROM mirror_fieldtimes WHERE uuid = ?", [uuid])
    }

    /// Drops the stamps rows of `uuids` in one statement (a page of imports or a bulk save's
    /// new objects have few or none; none at all when no record has a row).
    func dropFieldTimes(_ uuids: [String]) throws {
        guard !uuids.isEmpty, try database.scalar("SELECT 1 FROM mirror_fieldtimes LIMIT 1") != nil else { return }
        try changing.execute("DELETE FROM mirror_fieldtimes WHERE uuid IN (SELECT value FROM json_each(?))", [JSONWriter.text(strings: uuids)])
    }

    /// Replaces a record's stamps with `text` (an `MC_fieldModified` text, kept as it is).
    func replaceFieldTimes(_ uuid: String, text: String) throws {
        try changing.execute("INSERT INTO mirror_fieldtimes(uuid, times) VALUES (?, ?) ON CONFLICT(uuid) DO UPDATE SET times = excluded.times",
                             [uuid, text])
    }

    // MARK: Rows by record name

    /// `body` over the rows of `sql` for `uuids`, which it names as one JSON array
    /// (`IN (SELECT value FROM json_each(?))`): one cached statement for any number of them.
    /// A statement with a mark per uuid (`IN (?,?,…)`) had to be prepared for each page's size,
    /// and preparing it cost more than the lookups it made (a page of 400 records paid ~1.3 µs
    /// per uuid for each of its three lookups).
    func forRows(of uuids: [String], _ sql: String, _ body: (Row) throws -> Void) throws {
        guard !uuids.isEmpty else { return }
        for row in try database.query(sql, [JSONWriter.text(strings: uuids)]) { try body(row) }
    }

    /// Whether `table`'s indexed `column` may hold any of `names`: not when all it holds sorts
    /// before the least of them (bytewise, as SQLite compares text), one index probe. A page of
    /// records new to this device (time-ordered names, made after all it knows) then skips its
    /// lookups: they were a tenth of applying such a page.
    func mayHold(_ names: [String], table: String, column: String) throws -> Bool {
        guard let least = SQLValue.leastText(names) else { return false }
        return try database.scalar("SELECT 1 FROM \(table) WHERE \(column) >= ? LIMIT 1", [least]) != nil
    }

    /// The metadata (without server fields) and queue entries of `uuids`, two statements for a
    /// page of records instead of two per record.
    func metaAndPending(_ uuids: [String]) throws -> (meta: [String: MirrorBookkeeping.Meta], pending: [String: MirrorBookkeeping.Pending]) {
        var metas: [String: MirrorBookkeeping.Meta] = [:], pendings: [String: MirrorBookkeeping.Pending] = [:]
        if try mayHold(uuids, table: "mirror_meta", column: "uuid") {
            try forRows(of: uuids, "SELECT uuid, entity, zone_name, owner_name, change_tag FROM mirror_meta WHERE uuid IN (SELECT value FROM json_each(?))") { row in
                guard let uuid = row[0].string else { return }
                metas[uuid] = MirrorBookkeeping.Meta(uuid: uuid, entity: row[1].string ?? "", zone: ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? ""),
                                   changeTag: row[4].string, serverFields: nil)
            }
        }
        guard try mayHold(uuids, table: "mirror_pending", column: "uuid") else { return (metas, pendings) }
        try forRows(of: uuids, "SELECT \(MirrorBookkeeping.pendingColumns) FROM mirror_pending WHERE uuid IN (SELECT value FROM json_each(?))") { row in
            let entry = try MirrorBookkeeping.pending(row)
            pendings[entry.uuid] = entry
        }
        return (metas, pendings)
    }

    /// The share zone a shared-store row keeps as `zoneKey`, when the store has that share's
    /// metadata (a zone it was never given is no share of this user's, and nothing can be exported there).
    func shareZone(key zoneKey: String) throws -> ZoneID? {
        guard let zone = ZoneID(key: zoneKey),
              try database.scalar("SELECT 1 FROM z_share WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName]) != nil else { return nil }
        return zone
    }

    // MARK: Unexportable (shared-store objects in no share zone)

    func markUnexportable(uuid: String, objectID: String, zone: String) throws -> Bool {
        try changing.execute("INSERT OR IGNORE INTO mirror_unexportable(uuid, object_id, zone) VALUES (?, ?, ?)", [uuid, objectID, zone])
        return database.changes == 1
    }

    func unexportable() throws -> [String] {
        try database.query("SELECT object_id FROM mirror_unexportable ORDER BY object_id").compactMap { $0[0].string }
    }

    func clearUnexportable(_ uuid: String) throws {
        try changing.execute("DELETE FROM mirror_unexportable WHERE uuid = ?", [uuid])
    }

    // MARK: Unimportable records

    /// Returns false when that version of the record was already refused (nothing new to tell).
    @discardableResult
    func markUnimportable(_ uuid: String, entity: String, zone: ZoneID, tag: String?, error: WireError) throws -> Bool {
        if let known = try database.query("SELECT change_tag, code FROM mirror_unimportable WHERE uuid = ? AND zone_name = ? AND owner_name = ?",
                                          [uuid, zone.zoneName, zone.ownerName]).first,
           known[0].string == tag, known[1].string == error.code.rawValue {
            return false
        }
        try changing.execute("""
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
            try changing.execute("DELETE FROM mirror_unimportable WHERE uuid = ? AND zone_name = ? AND owner_name = ?",
                                 [uuid, zone.zoneName, zone.ownerName])
            if database.changes > 0 { cleared.append(uuid) }
        }
        return cleared
    }

    /// Forgets the refusals of a zone's records (the zone left this device).
    func dropUnimportable(zone: ZoneID) throws {
        try changing.execute("DELETE FROM mirror_unimportable WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName])
    }

    func unimportable() throws -> [MirrorBookkeeping.Unimportable] {
        try database.query("SELECT uuid, entity, zone_name, owner_name, change_tag, code, message FROM mirror_unimportable ORDER BY uuid").map { row in
            MirrorBookkeeping.Unimportable(recordName: row[0].string ?? "", entity: row[1].string ?? "",
                         zone: ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? "").key,
                         recordChangeTag: row[4].string, code: row[5].string ?? "", message: row[6].string ?? "")
        }
    }

    // MARK: Owner's shares

    func setShareRoot(zone: String, root: String) throws {
        try changing.execute("INSERT OR REPLACE INTO mirror_share(zone_name, root_uuid) VALUES (?, ?)", [zone, root])
    }

    /// A live share of the owner's zone that a fetch lists. A share made on this device keeps
    /// its root; one another device made is kept without a root (a zone-wide share names none):
    /// its zone alone marks the graph in it as shared.
    func keepShare(zone: String) throws {
        try changing.execute("INSERT OR IGNORE INTO mirror_share(zone_name, root_uuid) VALUES (?, '')", [zone])
    }

    /// The zones of the owner's live shares, made on this device or fetched (`keepShare`).
    func liveShareZones() throws -> Set<String> {
        Set(try database.query("SELECT zone_name FROM mirror_share").compactMap { $0[0].string })
    }

    func shareZone(ofRoot uuid: String) throws -> String? {
        try database.scalar("SELECT zone_name FROM mirror_share WHERE root_uuid = ?", [uuid])?.string
    }

    func dropShare(zone: String) throws {
        try changing.execute("DELETE FROM mirror_share WHERE zone_name = ?", [zone])
    }
}
