import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire
import Synchronization

/// One fetched page applied to a store: rows, links waiting for their targets, merges with
/// unsent edits, refusals, and zones that went away.
extension CoreDataMapping {
    /// Applies one page of zone changes to the store, and saves its token (the zone's token
    /// after the page) with it.
    /// A page commits without waiting for the disk (rows, history, metadata and token roll
    /// back together; the page is fetched again). Its history token must not reach clients
    /// before the disk has it, or a power cut could hand the token out again: the notice goes
    /// out once the log is synced, on the announcer's thread (`OrderedAnnouncer`), while this
    /// thread applies the next page. (A page that needs a context save, for merges, makes it
    /// as a client's save does: waiting.)
    func applyPage(_ page: ZonePage, to mirrored: any MirrorStore, user: String?, report: inout SyncFetchResult) throws {
        let turn = try CoreDataStore.of(mirrored), state = turn.state, store = turn.store, index = turn.index, stores = turn.stores
        var application = PageApplication(mapping: self, state: state, page: page, user: user)
        // The page's lookups, and its records new to this device with their metadata, in one
        // transaction; the context path below takes the rest.
        // Without waiting for the disk: the page, its token and its history roll back
        // together, and the write publishes its notice once the log is synced.
        try write(store, commit: .deferred) { changes in
            try application.sortChanged(report: &report)
            try application.keepDeletesThatStand()
            try application.importFresh()
            try application.applyDeletions(report: &report)
            try application.writeDirect(token: page.token, changes: &changes)
        }
        publishRefused(application.collisionNotices)
        try application.saveThroughContext(storeIndex: index, stores: stores, token: page.token)
        try linkWaiting(for: page.changed.map(\.recordName).filter { !application.collided.contains($0) }, state: state, storeIndex: index, stores: stores)
    }

    /// Sets the relationships that waited for `arrived` records (`PendingLinks`): imported in
    /// another page, another fetch, another zone or after a refusal, the destination is here now.
    /// An import like any other (author sync): the cloud's records already name it.
    func linkWaiting(for arrived: [String], state: StoreBookkeeping, storeIndex: Int, stores: StoreSet) throws {
        let waiting = try PendingLinks(database: state.store.database).waiting(for: arrived)
        guard !waiting.isEmpty else { return }
        var changes: [String: LocalChange] = [:]
        for link in waiting {
            guard let entity = state.store.model.entity(named: link.entity), entity.relationship(link.relationship) != nil else { continue }
            if changes[link.recordName] == nil {
                guard let fields = try Self.currentFields(entity: entity, uuid: link.recordName, state: state) else { continue }
                // Within the source's zone: a link kept waiting across zones stays so.
                changes[link.recordName] = LocalChange(uuid: link.recordName, entity: entity, fields: fields, zone: nil,
                                                       linkZone: link.zone.flatMap { ZoneID(key: $0) })
            }
            changes[link.recordName]?.fields?[MirrorRecordCoding.fieldName(link.relationship)] = ["type": "string", "value": .string(link.target)]
        }
        logger.info("relationships whose destination arrived are set", ["objects": .int(changes.count), "store": .string(state.store.name)])
        _ = try applyRefusing(Array(changes.values), storeIndex: storeIndex, stores: stores)
    }

    /// The zone of the object this store holds under `uuid`, when a record of that name arriving
    /// in `arriving` is not that object: CloudKit names a record by (recordName, zoneID), so a
    /// record in a zone of another owner — or of another entity — is another record, however
    /// its name reads. Only a move between one owner's zones (sharing) carries a record over.
    static func heldElsewhere(_ uuid: String, arriving: ZoneID, entity: EntityDescription, meta: MirrorBookkeeping.Meta?,
                              hasRow: Bool, state: StoreBookkeeping) throws -> ZoneID? {
        if let meta {
            return meta.zone.ownerName != arriving.ownerName || meta.entity != entity.name ? meta.zone : nil
        }
        guard hasRow, let held = try state.rowZone(entity: entity, uuid: uuid), held.ownerName != arriving.ownerName else { return nil }
        return held
    }

    /// Keeps a record that collides with an object of another zone's owner as unimportable
    /// (`sync.status` lists it, doctor reports it), in the page's transaction; the notice to
    /// tell clients, unless that version was refused before. The store holds one object per
    /// record name, so the record is not imported beside the object it collides with.
    func refuseCollision(_ record: CloudRecord, entity: EntityDescription, heldIn: ZoneID, state: StoreBookkeeping) throws -> ImportRefusedNotice? {
        let error = WireError(.uniquenessConstraint,
                              "Record '\(record.recordName)' of zone \(record.zoneID.key) has the name of an object this store holds in zone \(heldIn.key). A record of another owner's zone is another record: it was not imported, and the object was left as it is.",
                              details: ["recordName": .string(record.recordName), "zone": .string(record.zoneID.key), "heldInZone": .string(heldIn.key)])
        guard try state.markUnimportable(record.recordName, entity: entity.name, zone: record.zoneID, tag: record.recordChangeTag, error: error) else { return nil }
        logger.warning("a cloud record collides with an object of another owner's zone; not imported",
                       ["recordName": .string(record.recordName), "zone": .string(record.zoneID.key), "heldInZone": .string(heldIn.key)])
        return ImportRefusedNotice(store: state.store.name, recordName: record.recordName, entity: entity.name, zone: record.zoneID.key,
                                   code: error.code.rawValue, reason: error.message)
    }

    /// Whether `record` arrived moved from the zone this device's copy is in, by a device that
    /// had another version of it than this one (`MovedFrom`): the move deleted this device's
    /// version, and the record came from the mover's.
    static func movedWithout(_ meta: MirrorBookkeeping.Meta, record: CloudRecord, fields: [String: JSONValue]?) -> Bool {
        guard meta.zone.zoneName != record.zoneID.zoneName, let from = MovedFrom(fields: fields), from.zoneName == meta.zone.zoneName else {
            return false
        }
        return from.changeTag != meta.changeTag
    }

    /// Two versions neither of which is known to have seen the other (a moved copy and the one
    /// its move deleted): the ancestor is unknown. A field the moved copy holds exactly as this
    /// device last fetched it (`seen`: value and stamp) was not changed by the mover, so this
    /// device's edit of it stands; every other field that differs is decided by the conflict
    /// policy (by default the later edit by per-field stamp). `won`: the fields that keep this
    /// device's value.
    func mergeConcurrent(server record: CloudRecord, serverFields: [String: JSONValue]?, client: [String: JSONValue],
                         seen: [String: JSONValue]?, state: StoreBookkeeping) throws -> (fields: [String: JSONValue], times: [String: FieldStamp], won: Set<String>) {
        let outcome = try merge(server: record, client: CloudRecord(recordName: record.recordName, zoneID: record.zoneID, recordType: record.recordType,
                                                                     fields: client),
                                ancestor: nil, pending: nil, state: state, serverFields: .some(serverFields), seen: seen)
        let serverData = MirrorRecordCoding.dataFields(serverFields)
        let won = Set(outcome.fields.keys).union(serverData.keys).filter { outcome.fields[$0] != serverData[$0] }
        return (outcome.fields, outcome.times, won)
    }

    /// A record lives in the zone of the object it belongs to (an event in its session's share
    /// zone). Another device of the owner may have saved an event into the zone its session had
    /// left (it had not fetched the move yet): the event would stay behind where participants
    /// never see it. Such a record, received here, is queued and the send moves it (deleted
    /// from the old zone, created in its session's). Only a receiving device moves it: the
    /// device that wrote it gets its own record back unchanged and leaves it, and a device
    /// moving the children of a session it sees arrive could re-create an event another device
    /// had just moved and deleted.
    func followParents(_ changed: [CloudRecord], state: StoreBookkeeping) throws {
        let store = state.store
        for record in changed where !record.isShare {
            guard let name = record.entityName, store.holds(name), let entity = store.model.entity(named: name),
                  !entity.toOneRelationships.isEmpty,
                  let zone = try Self.zone(for: record.recordName, entity: entity, state: state), zone.zoneName != record.zoneID.zoneName,
                  try state.pending(uuid: record.recordName)?.kind != .delete else { continue }
            try state.enqueue(uuid: record.recordName, entity: entity.name, kind: .update, zone: nil, changed: [])
        }
    }

    /// The metadata of a record new to this device: its tag and server fields (the next merge's
    /// ancestor). Its stamps are the record's, read from the server fields just kept
    /// (`fieldTimesText`); a stale stamps row would hide them.
    static func keepImported(_ record: CloudRecord, entity: EntityDescription, state: StoreBookkeeping) throws {
        try state.setMeta(serverCopy: record, entity: entity.name)
        try state.dropFieldTimes(record.recordName)
    }

    /// A zone is gone (deleted, purged, or the user left / was removed / the share ended): its
    /// local rows are removed, its queued changes discarded (never moved elsewhere) and its
    /// token forgotten (docs/RULES.md, mirroring: zones deleted or purged; scenarios 25, 41, 42).
    func removeZone(_ zone: ZoneID, from mirrored: any MirrorStore) throws {
        let turn = try CoreDataStore.of(mirrored), state = turn.state, store = turn.store, index = turn.index, stores = turn.stores
        var local: [LocalChange] = []
        var uuids: [String] = []
        if store.scope == .shared {
            for entity in store.entities.values {
                let rows = try store.database.query("SELECT z_uuid FROM \(PersistentStore.table(entity.name)) WHERE z_zone = ?", [zone.key])
                for row in rows {
                    guard let uuid = row[0].string else { continue }
                    uuids.append(uuid)
                    local.append(LocalChange(uuid: uuid, entity: entity, fields: nil, zone: nil))
                }
            }
        } else {
            for meta in try state.metas(inZone: zone) {
                guard let entity = store.model.entity(named: meta.entity) else { continue }
                uuids.append(meta.uuid)
                local.append(LocalChange(uuid: meta.uuid, entity: entity, fields: nil, zone: nil))
            }
        }
        for meta in try state.metas(inZone: zone) where !uuids.contains(meta.uuid) { uuids.append(meta.uuid) }
        try applyLocally(local, storeIndex: index, stores: stores)
        try write(store) { _ in
            for uuid in uuids {
                try state.dropMeta(uuid)
                try state.dropPending(uuid)
            }
            for pending in try state.allPending() where pending.zone == zone { try state.dropPending(pending.uuid) }
            try state.setValue(MirrorBookkeeping.zoneTokenKey(zone), nil)
            try state.dropTombstones(zone: zone)
            try state.dropUnimportable(zone: zone)
            try PendingLinks(database: store.database).drop(zone: zone.key)
            if store.scope == .shared {
                try store.database.execute("DELETE FROM z_share WHERE zone_name = ? AND owner_name = ?", [zone.zoneName, zone.ownerName])
            } else {
                try state.dropShare(zone: zone.zoneName)
            }
        }
    }
}
