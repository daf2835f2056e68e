import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import Synchronization

/// One fetched page applied to a store: rows, links waiting for their targets, merges with
/// unsent edits, refusals, and zones that went away.
extension CloudMirror {
    /// Applies one page of zone changes to the scope's store, and saves `token` (the zone's
    /// token after the page) with it.
    /// `prepared`: per changed record, its row values as far as they need no store (`ZoneChanges`).
    /// A page commits without waiting for the disk (rows, history, metadata and token roll
    /// back together; the page is fetched again). Its history token must not reach clients
    /// before the disk has it, or a power cut could hand the token out again: the notice goes
    /// out once the log is synced, on the announcer's thread (`OrderedAnnouncer`), while this
    /// thread applies the next page. (A page that needs a context save, for merges, makes it
    /// as a client's save does: waiting.)
    /// `holdDeletes`: the page's deletions are kept (`holdTombstones`) for the fetch's end
    /// rather than applied.
    func applyPage(_ changed: [CloudRecord], prepared: [MirrorImport.Prepared?], deleted: [(String, String)], zone: ZoneID,
                           scope: StoreScope, token: String?, holdDeletes: Bool, report: inout MirrorFetchReport) throws {
        let me = user
        try state(scope) { state, index, stores in
            let store = state.store
            try ingest(store)
            var local: [LocalChange] = []
            /// Bookkeeping per record for after the context save (left out for a record it refused).
            var afterSave: [(uuid: String, step: () throws -> Void)] = []
            var notice: RemoteChangeNotice?
            /// Records whose copy here is already the fetched one (this device's own saves).
            var known: Set<String> = []
            /// Records named like an object this store holds in another owner's zone (never
            /// taken for that object), and what to tell clients of them.
            var collided: Set<String> = []
            var collisionNotices: [ImportRefusedNotice] = []
            // Strays are queued in the transaction that saves the page's token: a crash cannot
            // leave the token past a stray that was never queued.
            func queueStrays() throws {
                guard store.scope == .private, !changed.isEmpty, try state.knowsOtherZones else { return }
                try followParents(changed.filter { !known.contains($0.recordName) }, state: state)
            }
            // The page's lookups, and its records new to this device with their metadata, in one
            // transaction; the context path below takes the rest.
            // Without waiting for the disk: the page, its token and its history roll back
            // together, and its notice goes out once the log is synced (`publishOnceDurable`).
            try store.database.transaction(commit: .deferred) {
            // A deletion held from an earlier round of this fetch is older than a record the
            // zone lists now: applied last, it deleted an event moved away and back meanwhile.
            try state.dropTombstones(changed.map(\.recordName), zone: zone)
            let stored = try state.metaAndPending(changed.map(\.recordName))
            var rows: [String: [String: Int64]] = [:]
            for (entity, records) in Dictionary(grouping: changed, by: { $0.entityName ?? "" }) where store.holds(entity) {
                rows[entity] = try state.primaryKeys(entity: entity, uuids: records.map(\.recordName))
            }
            // Records new to this device, by position in the page (records are not copied: a
            // page's worth of copies and their releases showed in profiles).
            var fresh: [(position: Int, entity: EntityDescription)] = []
            for position in changed.indices {
                // Read in place until the record turns out to need more than the direct path:
                // a copy of each record (and its release) showed in the applying thread's time.
                if changed[position].isShare {
                    let record = changed[position]
                    if store.scope == .shared, let info = record.shareInfo,
                       let mine = info.participants.first(where: { $0.userRecordName == me }) {
                        let permission = SharePermission(rawValue: mine.permission) ?? .none
                        try SharePermissions.setMetadata(zone: record.zoneID.zoneName, owner: record.zoneID.ownerName, permission: permission, in: store)
                    }
                    continue
                }
                guard let entityName = changed[position].entityName, let entity = store.model.entity(named: entityName),
                      store.holds(entityName) else { continue }
                let uuid = changed[position].recordName
                var meta = stored.meta[uuid]
                if let heldIn = try Self.heldElsewhere(uuid, arriving: changed[position].zoneID, entity: entity, meta: meta,
                                                        hasRow: rows[entity.name]?[uuid] != nil, state: state) {
                    let notice = try refuseCollision(changed[position], entity: entity, heldIn: heldIn, state: state)
                    collided.insert(uuid)
                    if let notice { collisionNotices.append(notice) }
                    continue
                }
                if let meta, let tag = meta.changeTag, tag == changed[position].recordChangeTag,
                   meta.zone == changed[position].zoneID {
                    known.insert(uuid)
                    continue
                }
                let isKnown = meta != nil
                let queued = stored.pending[uuid]
                if !isKnown, queued == nil, rows[entity.name]?[uuid] == nil {
                    fresh.append((position, entity))
                    report.changedRecords += 1
                    continue
                }
                let record = changed[position]
                // Parsed once here (fields that came as text are parsed on each read).
                let serverFields = record.fields
                var fields = serverFields
                // The record's stamps, decoded only for a merge or for stamps already kept here.
                var times: [String: FieldStamp]?
                var keepPending = false
                /// Fields this device's copy won in a merge with a moved copy made without it.
                var won: Set<String> = []
                if queued?.kind != .delete, let meta, Self.movedWithout(meta, record: record, fields: serverFields),
                   let client = try Self.currentFields(entity: entity, uuid: uuid, state: state) {
                    let outcome = try mergeConcurrent(server: record, serverFields: serverFields, client: client, state: state)
                    fields = outcome.fields
                    times = outcome.times
                    won = outcome.won
                    keepPending = !won.isEmpty
                    report.merged += 1
                } else if let pending = queued {
                    if pending.kind == .delete {
                        if options.deletePolicy(entity.name) == .deleteWins {
                            // The local delete stands; remember the server's tag and send the delete.
                            afterSave.append((uuid, { try state.setMeta(serverCopy: record, entity: entity.name) }))
                            continue
                        }
                    } else if let client = try Self.currentFields(entity: entity, uuid: uuid, state: state) {
                        meta = try state.meta(uuid, withFields: true)
                        let outcome = try merge(server: record, client: CloudRecord(recordName: uuid, zoneID: record.zoneID, recordType: record.recordType, fields: client),
                                                ancestor: meta?.serverFields, pending: pending, state: state, serverFields: .some(serverFields))
                        fields = outcome.fields
                        times = outcome.times
                        keepPending = outcome.clientWon
                        report.merged += 1
                    }
                }
                local.append(LocalChange(uuid: uuid, entity: entity, fields: fields, zone: record.zoneID.key))
                let keep = keepPending
                let stamps = times
                afterSave.append((uuid, {
                    try state.setMeta(serverCopy: record, entity: entity.name)
                    if let stamps {
                        try state.setFieldTimes(uuid, stamps)
                    } else if !isKnown {
                        // A record new to this device: its stamps are the record's, read from
                        // the server fields just kept (`fieldTimesText`); a stale row would
                        // hide them.
                        try state.dropFieldTimes(uuid)
                    } else {
                        try state.setFieldTimes(uuid, MirrorRecordCoding.times(serverFields))
                    }
                    if !keep, queued != nil { try state.dropPending(uuid) }
                    // Sent to the record where it lives now (an insert still queued stays one).
                    if !won.isEmpty { try state.enqueue(uuid: uuid, entity: entity.name, kind: .update, zone: nil, changed: won) }
                }))
                report.changedRecords += 1
            }
            // A record new here that this device deleted: another device moved it into another
            // zone (shared its session) before the delete arrived, which found only the old
            // zone's tombstone. The delete stands (deleteWins): it is sent again to the record
            // where it lives now, and the record is not brought back. A move can also bring it
            // back into the zone the delete was made in (it had moved away and back, an event
            // between sessions): it carries `MC_movedFrom` there, where a record a resurrect
            // policy re-created does not.
            let deletedIn = try state.deletedHere(fresh.map { changed[$0.position].recordName })
            func movedAfterDelete(_ position: Int, _ entity: EntityDescription) -> Bool {
                guard let zone = deletedIn[changed[position].recordName], options.deletePolicy(entity.name) == .deleteWins else { return false }
                return changed[position].zoneID != zone || MovedFrom(fields: changed[position].fields) != nil
            }
            if !deletedIn.isEmpty {
                for (position, entity) in fresh where movedAfterDelete(position, entity) {
                    let record = changed[position]
                    afterSave.append((record.recordName, {
                        try state.setMeta(serverCopy: record, entity: entity.name)
                        try state.enqueue(uuid: record.recordName, entity: entity.name, kind: .delete, zone: record.zoneID, changed: [])
                    }))
                }
                fresh.removeAll { movedAfterDelete($0.position, $0.entity) }
            }
            // Parents before children, so a child's relationship finds its parent's row.
            var direct = MirrorImport(store: store)
            var imported: [(position: Int, entity: EntityDescription)] = []
            fresh.sort { ($0.entity.toOneRelationships.count, $0.position) < ($1.entity.toOneRelationships.count, $1.position) }
            for (position, entity) in fresh {
                let values = position < prepared.count ? prepared[position] : nil
                if try direct.accept(uuid: changed[position].recordName, entity: entity, prepared: values, zone: changed[position].zoneID.key) {
                    imported.append((position, entity))
                } else {
                    let record = changed[position]
                    local.append(LocalChange(uuid: record.recordName, entity: entity, fields: record.fields, zone: record.zoneID.key))
                    afterSave.append((record.recordName, { try Self.keepImported(record, entity: entity, state: state) }))
                }
            }
            if holdDeletes { try state.holdTombstones(deleted, zone: zone) }
            for (uuid, recordType) in holdDeletes ? [] : deleted {
                let linkEntity = recordType == MirrorLinkRecords.recordType ? try MirrorLinkRecords.deletedLinkEntity(uuid: uuid, state: state) : nil
                guard let entityName = linkEntity ?? CloudKitNames.entityName(recordType: recordType),
                      let entity = store.model.entity(named: entityName) else { continue }
                if let pending = try state.pending(uuid: uuid), pending.kind != .delete, options.deletePolicy(entity.name) == .resurrect {
                    // Scenario 20 with resurrect: the local edit re-creates the record.
                    afterSave.append((uuid, { try state.forgetServerCopy(uuid) }))
                    continue
                }
                let meta = try state.meta(uuid)
                // A record that moved to another zone (sharing moves a graph from the core-data
                // zone into a share zone) is deleted from its old zone: that deletion must not
                // remove the object, whichever zone's changes this fetch applies first.
                if let meta, meta.zone != zone { continue }
                // Another owner's tombstone never deletes this store's object of the same name.
                if meta == nil, let held = try state.rowZone(entity: entity, uuid: uuid), held != zone { continue }
                let known = try meta != nil || state.primaryKey(entity: entity.name, uuid: uuid) != nil
                guard known else { continue }
                local.append(LocalChange(uuid: uuid, entity: entity, fields: nil, zone: nil))
                afterSave.append((uuid, { try state.dropMeta(uuid); try state.dropPending(uuid) }))
                report.deletedRecords += 1
            }
            // All history before this import is queued (`ingest` above): the export cursor can
            // move past the import's own transaction here rather than in one more commit.
            let cursorIsCurrent = try state.value(MirrorBookkeeping.exportCursorKey) == String(store.lastToken)
            notice = try direct.write(router: engine.router, logger: engine.logger)
            for (position, entity) in imported { try state.setMeta(serverCopy: changed[position], entity: entity.name) }
            try state.dropFieldTimes(imported.map { changed[$0.position].recordName })
            if let notice, cursorIsCurrent { try state.setValue(MirrorBookkeeping.exportCursorKey, String(notice.token)) }
            if local.isEmpty {
                for (_, step) in afterSave { try step() }
                try state.clearUnimportable(changed.map(\.recordName).filter { !collided.contains($0) } + (holdDeletes ? [] : deleted.map(\.0)), zone: zone)
                afterSave = []
                try queueStrays()
                if let token { try state.setValue(MirrorBookkeeping.zoneTokenKey(zone), token) }
            }
            }
            if let notice { engine.publishOnceDurable([notice], store: store) }
            publishRefused(collisionNotices)
            if !local.isEmpty {
                let refused = try applyRefusing(local, storeIndex: index, stores: stores)
                let told = try store.database.transaction(commit: .deferred) { () -> [ImportRefusedNotice] in
                    for (uuid, step) in afterSave where refused[uuid] == nil { try step() }
                    try state.clearUnimportable((changed.map(\.recordName).filter { !collided.contains($0) } + (holdDeletes ? [] : deleted.map(\.0)))
                        .filter { refused[$0] == nil }, zone: zone)
                    let told = try keepRefused(refused, of: local, zone: zone, tags: Dictionary(changed.map { ($0.recordName, $0.recordChangeTag) },
                                                                                                  uniquingKeysWith: { $1 }), state: state)
                    try queueStrays()
                    if let token { try state.setValue(MirrorBookkeeping.zoneTokenKey(zone), token) }
                    return told
                }
                publishRefused(told)
            }
            try linkWaiting(for: changed.map(\.recordName).filter { !collided.contains($0) }, state: state, storeIndex: index, stores: stores)
            // The mirror's own import is history too; it is never exported.
            try ingest(store)
        }
    }

    /// Sets the relationships that waited for `arrived` records (`PendingLinks`): imported in
    /// another page, another fetch, another zone or after a refusal, the destination is here now.
    /// An import like any other (author sync): the cloud's records already name it.
    func linkWaiting(for arrived: [String], state: MirrorBookkeeping, storeIndex: Int, stores: StoreSet) throws {
        let waiting = try PendingLinks(database: state.store.database).waiting(for: arrived)
        guard !waiting.isEmpty else { return }
        var changes: [String: LocalChange] = [:]
        for link in waiting {
            guard let entity = state.store.model.entity(named: link.entity), entity.relationship(link.relationship) != nil else { continue }
            if changes[link.recordName] == nil {
                guard let fields = try Self.currentFields(entity: entity, uuid: link.recordName, state: state) else { continue }
                changes[link.recordName] = LocalChange(uuid: link.recordName, entity: entity, fields: fields, zone: nil)
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
                              hasRow: Bool, state: MirrorBookkeeping) throws -> ZoneID? {
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
    func refuseCollision(_ record: CloudRecord, entity: EntityDescription, heldIn: ZoneID, state: MirrorBookkeeping) throws -> ImportRefusedNotice? {
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

    /// Two versions neither of which saw the other (a moved copy and the one its move deleted):
    /// the ancestor is unknown, so every field that differs is decided by the conflict policy
    /// (by default the later edit by per-field stamp). `won`: the fields that keep this device's value.
    func mergeConcurrent(server record: CloudRecord, serverFields: [String: JSONValue]?, client: [String: JSONValue],
                         state: MirrorBookkeeping) throws -> (fields: [String: JSONValue], times: [String: FieldStamp], won: Set<String>) {
        let outcome = try merge(server: record, client: CloudRecord(recordName: record.recordName, zoneID: record.zoneID, recordType: record.recordType,
                                                                     fields: client),
                                ancestor: nil, pending: nil, state: state, serverFields: .some(serverFields))
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
    private func followParents(_ changed: [CloudRecord], state: MirrorBookkeeping) throws {
        let store = state.store
        for record in changed where !record.isShare {
            guard let name = record.entityName, store.holds(name), let entity = store.model.entity(named: name),
                  !entity.toOneRelationships.isEmpty,
                  let zone = try zone(for: record.recordName, entity: entity, state: state), zone.zoneName != record.zoneID.zoneName,
                  try state.pending(uuid: record.recordName)?.kind != .delete else { continue }
            try state.enqueue(uuid: record.recordName, entity: entity.name, kind: .update, zone: nil, changed: [])
        }
    }

    /// The metadata of a record new to this device: its tag and server fields (the next merge's
    /// ancestor). Its stamps are the record's, read from the server fields just kept
    /// (`fieldTimesText`); a stale stamps row would hide them.
    private static func keepImported(_ record: CloudRecord, entity: EntityDescription, state: MirrorBookkeeping) throws {
        try state.setMeta(serverCopy: record, entity: entity.name)
        try state.dropFieldTimes(record.recordName)
    }

    /// A zone is gone (deleted, purged, or the user left / was removed / the share ended): its
    /// local rows are removed, its queued changes discarded (never moved elsewhere) and its
    /// token forgotten (docs/RULES.md, mirroring: zones deleted or purged; scenarios 25, 41, 42).
    func removeZone(_ zone: ZoneID, scope: StoreScope, purged: Bool, report: inout MirrorFetchReport) throws {
        try state(scope) { state, index, stores in
            let store = state.store
            try ingest(store)
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
            try store.database.transaction {
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
            // The wipe's own history (author sync) is not exported.
            try ingest(store)
        }
        progress.withLock { _ = $0.zonesEnsured.remove(zone.key) }
        report.zonesRemoved.append((purged ? "purged:" : "") + zone.key)
    }
}
