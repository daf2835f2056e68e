import CloudWire
import MeowWire
import SQLiteKit
import StoreServiceKit
import StoreWire

/// The mirror's bookkeeping of one store as the mapping reads it: the tables
/// (`BookkeepingTables`) and the store's rows by record name beside them.
struct StoreBookkeeping: BookkeepingTables {
    let store: PersistentStore
    var database: Database { store.database }
    var storeName: String { store.name }
    var scope: StoreScope { store.scope }

    init(_ store: PersistentStore) { self.store = store }
}

/// Rows found by record name.
extension StoreBookkeeping {
    /// The primary key of the row of `entity` whose uuid is `uuid`.
    func primaryKey(entity: String, uuid: String) throws -> Int64? {
        guard store.holds(entity) else { return nil }
        return try database.scalar("SELECT z_pk FROM \(PersistentStore.table(entity)) WHERE z_uuid = ?", [uuid])?.int64
    }

    /// The primary key of the row of `entity` named `uuid` for a relationship that resolves
    /// within `zone` (`CoreDataMapping.linkZone(of:store:user:)`): a record name then means a record of
    /// that zone (CloudKit names a record by name and zone), and an object this store holds in
    /// another zone is not it. nil `zone`: any object of the store.
    func primaryKey(entity: String, uuid: String, linkedFrom zone: ZoneID?) throws -> Int64? {
        guard let key = try primaryKey(entity: entity, uuid: uuid) else { return nil }
        guard let zone else { return key }
        let held: ZoneID?
        if store.scope == .shared {
            held = try store.model.entity(named: entity).flatMap { try rowZone(entity: $0, uuid: uuid) }
        } else {
            held = try meta(uuid)?.zone
        }
        guard let held, held.zoneName == zone.zoneName else { return nil }
        return zone.ownerName == ZoneID.defaultOwner || held.ownerName == ZoneID.defaultOwner || held.ownerName == zone.ownerName ? key : nil
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

    /// The zone the shared-store row of `entity` named `uuid` lives in (nil: no such row, or
    /// not a shared-store row).
    func rowZone(entity: EntityDescription, uuid: String) throws -> ZoneID? {
        guard store.scope == .shared, store.holds(entity.name) else { return nil }
        return try store.read(entity, uuid: uuid)?.zone.flatMap { ZoneID(key: $0) }
    }

    /// The key of `target` when the stored object `source` already relates to it through its
    /// to-one `relationship`, whatever its zone: a record that keeps a link its object has makes
    /// no new one (this device's own side of a merge, or an object another of the owner's
    /// devices is moving between zones), so it is kept rather than emptied.
    func keptLink(source: String, entity: EntityDescription, relationship: String, target: String) throws -> Int64? {
        guard let number = entity.toOneRelationships.firstIndex(where: { $0.name == relationship }),
              let destination = store.model.entity(named: entity.toOneRelationships[number].destination),
              let row = try store.read(entity, uuid: source), let current = row.values[entity.position(ofToOne: number)].int64,
              try primaryKey(entity: destination.name, uuid: target) == current else { return nil }
        return current
    }

    /// The to-one relationships of `row` (the record `uuid`) that wait for an object this store
    /// holds in another zone than the one they resolve within: a name another user wrote into a
    /// share zone that is one of the owner's objects elsewhere (`CoreDataMapping.linkZone(of:store:user:)`).
    /// The row has no such relationship, so a save of the record sends each empty
    /// (`buildBatches`): an update carries only its changed fields and the cloud keeps the rest,
    /// and a name kept under the owner's last modification would resolve, on the owner's other
    /// devices, as one the owner wrote. A link whose object has not arrived yet is not among them.
    func zoneRefusedLinks(of uuid: String, entity: EntityDescription, row: PersistentStore.StoredRow) throws -> [PendingLinks.Link] {
        var refused: [PendingLinks.Link] = []
        for link in try PendingLinks(database: database).links(from: uuid) {
            guard let number = entity.toOneRelationships.firstIndex(where: { $0.name == link.relationship }),
                  row.values[entity.position(ofToOne: number)].isNull,
                  let zone = link.zone.flatMap({ ZoneID(key: $0) }) else { continue }
            let destination = entity.toOneRelationships[number].destination
            guard try primaryKey(entity: destination, uuid: link.target) != nil,
                  try primaryKey(entity: destination, uuid: link.target, linkedFrom: zone) == nil else { continue }
            refused.append(link)
        }
        return refused
    }

    /// Objects and many-to-many link rows of this store that the cloud has not got and nothing
    /// will send: no record metadata, no queue entry, and not reported unexportable (at most
    /// `limit`, as objectIDs). After an ingest none should be: each is a change that sits unsent
    /// while the device counts 0 pending.
    func unsent(limit: Int) throws -> [String] {
        var found: [String] = []
        for entity in store.model.entities where store.holds(entity.name) && found.count < limit {
            let keys = try database.query("""
                SELECT z_pk FROM \(PersistentStore.table(entity.name)) t WHERE NOT EXISTS (SELECT 1 FROM mirror_meta m WHERE m.uuid = t.z_uuid)
                AND NOT EXISTS (SELECT 1 FROM mirror_pending p WHERE p.uuid = t.z_uuid)
                AND NOT EXISTS (SELECT 1 FROM mirror_unexportable u WHERE u.uuid = t.z_uuid) ORDER BY z_pk LIMIT ?
                """, [limit - found.count])
            found += keys.compactMap { $0[0].int64 }.map { store.objectID(entity.name, $0).uri }
        }
        return found
    }
}
