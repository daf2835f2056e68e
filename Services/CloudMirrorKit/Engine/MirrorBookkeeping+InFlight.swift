import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// Creates awaiting their answer, records deleted here, tombstones a fetch holds, and the zones
/// the kept server copies are in.
extension MirrorBookkeeping {
    /// One batch's creates in one zone: each record's name and the queue version it carried.
    struct CreatesInFlight {
        var id: Int64
        var zone: ZoneID
        var entries: [(name: String, seq: Int64, generation: Int64)]
    }
}

extension BookkeepingTables {
    // MARK: Creates whose answer is outstanding

    /// Records a batch's creates in one zone (records sent without a change tag, each with the
    /// queue version it carries) before the batch goes out, in the transaction that builds it.
    /// Until the batch's verdict is applied (which drops the row) the server may hold them
    /// without this device knowing: a send whose answer was lost, or a device killed before
    /// applying it. Returns the row's id.
    func recordCreatesInFlight(_ entries: [MirrorBookkeeping.Pending], zone: ZoneID) throws -> Int64 {
        var text = "["
        for (index, entry) in entries.enumerated() {
            if index > 0 { text += "," }
            text += "["
            JSONWriter.appendString(entry.uuid, to: &text)
            text += ",\(entry.seq),\(entry.generation)]"
        }
        try changing.execute("INSERT INTO mirror_inflight(zone_name, owner_name, names) VALUES (?, ?, ?)",
                             [zone.zoneName, zone.ownerName, text + "]"])
        return database.lastInsertRowID
    }

    func dropCreatesInFlight(_ ids: [Int64]) throws {
        for id in ids { try changing.execute("DELETE FROM mirror_inflight WHERE id = ?", [id]) }
    }

    /// Creates recorded by sends that never applied their answer.
    func createsInFlight() throws -> [MirrorBookkeeping.CreatesInFlight] {
        try database.query("SELECT id, zone_name, owner_name, names FROM mirror_inflight ORDER BY id").compactMap { row -> MirrorBookkeeping.CreatesInFlight? in
            guard let id = row[0].int64, let zone = row[1].string, let owner = row[2].string, let names = row[3].string,
                  let list = try? JSONParser.parse(names).arrayValue else { return nil }
            let entries = list.compactMap { item -> (name: String, seq: Int64, generation: Int64)? in
                guard let parts = item.arrayValue, parts.count == 3, let name = parts[0].stringValue, let seq = parts[1].intValue,
                      let generation = parts[2].intValue else { return nil }
                return (name, Int64(seq), Int64(generation))
            }
            return MirrorBookkeeping.CreatesInFlight(id: id, zone: ZoneID(zoneName: zone, ownerName: owner), entries: entries)
        }
    }

    // MARK: Records this device deleted

    /// Remembers that this device deleted the record `uuid` in `zone` and the server took the
    /// delete. Another device may have moved the record to another zone first (sharing its
    /// session): the delete then found only the tombstone the move left, and the record comes
    /// back from its new zone, which `deletedHere` tells. (Back in the same zone it was
    /// re-created, by a device whose delete policy is resurrect, and is welcome.)
    func rememberDeleted(_ uuid: String, zone: ZoneID) throws {
        try changing.execute("INSERT OR REPLACE INTO mirror_deleted(uuid, zone_name, owner_name) VALUES (?, ?, ?)",
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
                                      [JSONWriter.text(strings: uuids)]) {
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
            try changing.execute("INSERT OR REPLACE INTO mirror_tombstones(uuid, record_type, zone_name, owner_name) VALUES (?, ?, ?, ?)",
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
        try changing.execute("DELETE FROM mirror_tombstones WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName])
    }

    /// Drops the held tombstones of records a later page brought back into the same zone (a
    /// record moved away and back between two rounds of one fetch): the change is the newer.
    func dropTombstones(_ uuids: [String], zone: ZoneID) throws {
        guard !uuids.isEmpty, try holdsTombstones else { return }
        for uuid in uuids {
            try changing.execute("DELETE FROM mirror_tombstones WHERE uuid = ? AND zone_name = ? AND owner_name = ?",
                                 [uuid, zone.zoneName, zone.ownerName])
        }
    }

    var holdsTombstones: Bool {
        get throws { try database.scalar("SELECT 1 FROM mirror_tombstones LIMIT 1") != nil }
    }

    /// Whether a held tombstone may still delete an object: one whose record this store knows in
    /// another zone (moved there, the tombstone's zone being its old one) deletes nothing however
    /// long it waits, since a deletion never removes an object from a zone it is not in.
    var holdsTombstonesThatMayDelete: Bool {
        get throws {
            try database.scalar("""
                SELECT 1 FROM mirror_tombstones t WHERE NOT EXISTS (SELECT 1 FROM mirror_meta m WHERE m.uuid = t.uuid
                    AND NOT (m.zone_name = t.zone_name AND m.owner_name = t.owner_name)) LIMIT 1
                """) != nil
        }
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
        try changing.execute("DELETE FROM mirror_meta WHERE uuid = ?", [uuid])
        try changing.execute("DELETE FROM mirror_fieldtimes WHERE uuid = ?", [uuid])
    }

    func metas(inZone zone: ZoneID) throws -> [MirrorBookkeeping.Meta] {
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
        if scope == .shared {
            for row in try database.query("SELECT zone_name, owner_name FROM z_share") {
                zones.insert(ZoneID(zoneName: row[0].string ?? "", ownerName: row[1].string ?? ""))
            }
        }
        return zones
    }

    /// Empties every bookkeeping table but the values of `keys` (the account left the device).
    func forgetEverything(keeping keys: [String]) throws {
        let database = try changing
        for table in ["mirror_pending", "mirror_meta", "mirror_fieldtimes", "mirror_unexportable", "mirror_unimportable", "mirror_share",
                      "mirror_deleted", "mirror_inflight", "mirror_tombstones"] {
            try database.execute("DELETE FROM \(table)")
        }
        try database.execute("DELETE FROM mirror_kv WHERE key NOT IN (SELECT value FROM json_each(?))", [JSONWriter.text(strings: keys)])
    }
}
