import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// Share metadata the shared store keeps per cloud zone (filled by the mirror; settable with
/// `share.setMetadata`), and NSPersistentCloudKitContainer's permission predicates over it.
package enum SharePermissions {
    /// The permission on the zone a row keeps as `zoneKey` (`owner/zoneName`); a zone the store
    /// has no metadata for is `none`. By owner and name: another owner's zone of the same name
    /// is another zone, with a share of its own.
    static func permission(zone zoneKey: String, in store: PersistentStore) throws -> SharePermission {
        guard let zone = ZoneID(key: zoneKey),
              let row = try store.database.query("SELECT permission FROM z_share WHERE zone_name = ? AND owner_name = ?",
                                                 [zone.zoneName, zone.ownerName]).first else { return .none }
        return try .stored(row[0].string, in: place(store, zone: zone.zoneName, owner: zone.ownerName))
    }

    /// Where a damaged permission was read, for the error.
    private static func place(_ store: PersistentStore, zone: String, owner: String) -> String {
        "Store \(store.name)'s share metadata (z_share) for zone \(CloudKitNames.quoted(zone)) of \(CloudKitNames.quoted(owner))"
    }

    package static func setMetadata(zone: String, owner: String, permission: SharePermission, in store: PersistentStore) throws {
        let now = store.clock.date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        try store.database.execute("""
            INSERT INTO z_share(zone_name, owner_name, permission, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT(zone_name, owner_name) DO UPDATE SET permission = excluded.permission, updated_at = excluded.updated_at
            """, [zone, owner, permission.rawValue, now])
    }

    static func shares(in store: PersistentStore) throws -> [ShareMetadata] {
        try store.database.query("SELECT zone_name, owner_name, permission FROM z_share ORDER BY zone_name").map {
            let (zone, owner) = ($0[0].string ?? "", $0[1].string ?? "")
            return ShareMetadata(zoneName: zone, ownerName: owner, permission: try .stored($0[2].string, in: place(store, zone: zone, owner: owner)))
        }
    }

    /// canModifyManagedObjects(in:): always for the private store; for the shared store, when
    /// some share there is read-write.
    static func canModify(_ store: PersistentStore) throws -> Bool {
        if store.scope == .private { return true }
        return try store.database.scalar("SELECT 1 FROM z_share WHERE permission = 'readWrite' LIMIT 1") != nil
    }

    /// canUpdateRecord / canDeleteRecord(forManagedObjectWith:): temporary IDs and private-store
    /// objects yes; shared-store objects when their zone's share is read-write. (Apple's answer
    /// for a temporary ID is yes even in a read-only share; the save closes that gap.)
    static func canChange(_ object: ContextObject?, id: ObjectID, stores: StoreSet) throws -> Bool {
        if id.isTemporary { return true }
        guard let uuid = id.storeUUID, let index = stores.index(uuid: uuid) else { return false }
        let store = stores.list[index]
        if store.scope == .private { return true }
        var zone = object?.zone
        if object == nil, let entity = stores.model.entity(named: id.entity), let key = id.primaryKey {
            zone = try store.read(entity, primaryKey: key)?.zone
        }
        guard let zone else { return try canModify(store) }
        return try permission(zone: zone, in: store) == .readWrite
    }
}
