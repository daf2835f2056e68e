import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

extension CoreDataMapping {
    /// One fetched page on its way into a store (`applyPage`): records new here go to the direct
    /// import (`MirrorImport`), the rest (merges, records the direct path leaves) to a context
    /// save (`local`), each with the bookkeeping to do once it is saved (`afterSave`), which a
    /// record the save refuses skips.
    struct PageApplication {
        let mapping: CoreDataMapping
        let state: StoreBookkeeping
        let changed: [CloudRecord]
        let prepared: [MirrorImport.Prepared?]
        let deleted: [(String, String)]
        let zone: ZoneID
        let holdDeletes: Bool
        /// The signed-in user, whose participant entry in a share record is this device's permission.
        let me: String?
        var store: PersistentStore { state.store }

        var direct: MirrorImport
        var local: [LocalChange] = []
        var afterSave: [(uuid: String, step: () throws -> Void)] = []
        /// Records whose copy here is already the fetched one (this device's own saves).
        var known: Set<String> = []
        /// Records named like an object this store holds in another owner's zone (never taken
        /// for that object), and what to tell clients of them.
        var collided: Set<String> = []
        var collisionNotices: [ImportRefusedNotice] = []
        /// Records new to this device, by position in the page (records are not copied: a
        /// page's worth of copies and their releases showed in profiles).
        var fresh: [(position: Int, entity: EntityDescription)] = []
        var imported: [(position: Int, entity: EntityDescription)] = []

        init(mapping: CoreDataMapping, state: StoreBookkeeping, page: ZonePage, user: String?) {
            self.mapping = mapping
            self.state = state
            changed = page.changed
            prepared = page.prepared
            deleted = page.deleted
            zone = page.zone
            holdDeletes = page.holdDeletes
            me = user
            direct = MirrorImport(store: state.store)
        }

        /// The page's records not refused for a name collision, and its deletions when applied
        /// now: their earlier refusals are cleared once they are in.
        var settledNames: [String] {
            changed.map(\.recordName).filter { !collided.contains($0) } + (holdDeletes ? [] : deleted.map(\.0))
        }

        // MARK: Sorting the changed records

        /// Sorts the page's changed records: a share record sets its zone's permission; a record
        /// named like another owner's object here is refused; one this device already has as
        /// fetched is skipped; one new here goes to the direct import; the rest to a context save.
        mutating func sortChanged(report: inout SyncFetchResult) throws {
            // A deletion held from an earlier round of this fetch is older than a record the
            // zone lists now: applied last, it deleted an event moved away and back meanwhile.
            try state.dropTombstones(changed.map(\.recordName), zone: zone)
            let stored = try state.metaAndPending(changed.map(\.recordName))
            // Names by entity, not records grouped: grouping copied every record of the page.
            var names: [String: [String]] = [:]
            for record in changed { names[record.entityName ?? "", default: []].append(record.recordName) }
            var rows: [String: [String: Int64]] = [:]
            for (entity, uuids) in names where store.holds(entity) {
                rows[entity] = try state.primaryKeys(entity: entity, uuids: uuids)
            }
            for position in changed.indices {
                // Read in place until the record turns out to need more than the direct path:
                // a copy of each record (and its release) showed in the applying thread's time.
                if changed[position].isShare {
                    try keepShare(changed[position])
                    continue
                }
                guard let entityName = changed[position].entityName, let entity = store.model.entity(named: entityName),
                      store.holds(entityName) else { continue }
                let uuid = changed[position].recordName
                let meta = stored.meta[uuid]
                let hasRow = rows[entity.name]?[uuid] != nil
                if let heldIn = try CoreDataMapping.heldElsewhere(uuid, arriving: changed[position].zoneID, entity: entity, meta: meta,
                                                               hasRow: hasRow, state: state) {
                    let notice = try mapping.refuseCollision(changed[position], entity: entity, heldIn: heldIn, state: state)
                    collided.insert(uuid)
                    if let notice { collisionNotices.append(notice) }
                    continue
                }
                if let meta, let tag = meta.changeTag, tag == changed[position].recordChangeTag,
                   meta.zone == changed[position].zoneID {
                    known.insert(uuid)
                    continue
                }
                let queued = stored.pending[uuid]
                if meta == nil, queued == nil, !hasRow {
                    fresh.append((position, entity))
                    report.changedRecords += 1
                    continue
                }
                if try takeChanged(changed[position], entity: entity, meta: meta, queued: queued, report: &report) {
                    report.changedRecords += 1
                }
            }
        }

        /// A share record: in the private store, a share of this owner's zone, kept among the
        /// owner's shares whichever of the owner's devices made it (share.create refuses a graph
        /// in a live share's zone); in the shared store, this user's participant entry is the
        /// zone's permission.
        private func keepShare(_ record: CloudRecord) throws {
            if store.scope == .private {
                if record.recordName == CloudKitNames.zoneShareName { try state.keepShare(zone: record.zoneID.zoneName) }
                return
            }
            guard let info = record.shareInfo,
                  let mine = info.participants.first(where: { $0.userRecordName == me }) else { return }
            try SharePermissions.setMetadata(zone: record.zoneID.zoneName, owner: record.zoneID.ownerName, permission: mine.permission, in: store)
        }

        /// A changed record this store knows (its metadata, a row or a queued change): merged
        /// with the unsent edit or with this device's copy a move left behind, then saved through
        /// a context. False when the local delete stands and the record is not taken.
        private mutating func takeChanged(_ record: CloudRecord, entity: EntityDescription, meta stored: MirrorBookkeeping.Meta?,
                                          queued: MirrorBookkeeping.Pending?, report: inout SyncFetchResult) throws -> Bool {
            let uuid = record.recordName
            let state = state
            let isKnown = stored != nil
            // Parsed once here (fields that came as text are parsed on each read).
            let serverFields = record.fields
            var fields = serverFields
            // The record's stamps, decoded only for a merge or for stamps already kept here.
            var times: [String: FieldStamp]?
            var keepPending = false
            /// Fields this device's copy won in a merge with a moved copy made without it.
            var won: Set<String> = []
            if queued?.kind != .delete, let stored, CoreDataMapping.movedWithout(stored, record: record, fields: serverFields),
               let client = try CoreDataMapping.currentFields(entity: entity, uuid: uuid, state: state) {
                let seen = try state.meta(uuid, withFields: true)?.serverFields
                let outcome = try mapping.mergeConcurrent(server: record, serverFields: serverFields, client: client, seen: seen, state: state)
                fields = outcome.fields
                times = outcome.times
                won = outcome.won
                keepPending = !won.isEmpty
                report.merged += 1
            } else if let pending = queued {
                if pending.kind == .delete {
                    if mapping.options.deletePolicy(entity.name) == .deleteWins {
                        // The local delete stands; remember the server's tag and send the delete.
                        afterSave.append((uuid, { try state.setMeta(serverCopy: record, entity: entity.name) }))
                        return false
                    }
                } else if let client = try CoreDataMapping.currentFields(entity: entity, uuid: uuid, state: state) {
                    let meta = try state.meta(uuid, withFields: true)
                    let outcome = try mapping.merge(server: record, client: CloudRecord(recordName: uuid, zoneID: record.zoneID, recordType: record.recordType, fields: client),
                                                   ancestor: meta?.serverFields, pending: pending, state: state, serverFields: .some(serverFields))
                    fields = outcome.fields
                    times = outcome.times
                    keepPending = outcome.clientWon
                    report.merged += 1
                }
            }
            local.append(LocalChange(uuid: uuid, entity: entity, fields: fields, zone: record.zoneID.key,
                                     linkZone: mapping.linkZone(of: record, store: store, user: me)))
            let keep = keepPending
            let stamps = times
            let wonFields = won
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
                if !wonFields.isEmpty { try state.enqueue(uuid: uuid, entity: entity.name, kind: .update, zone: nil, changed: wonFields) }
            }))
            return true
        }

        // MARK: New records and deletions

        /// A record new here that this device deleted: another device moved it into another
        /// zone (shared its session) before the delete arrived, which found only the old
        /// zone's tombstone. The delete stands (deleteWins): it is sent again to the record
        /// where it lives now, and the record is not brought back. A move can also bring it
        /// back into the zone the delete was made in (it had moved away and back, an event
        /// between sessions): it carries its move receipt there, where a record a resurrect
        /// policy re-created does not.
        mutating func keepDeletesThatStand() throws {
            let changed = changed, state = state, options = mapping.options
            let deletedIn = try state.deletedHere(fresh.map { changed[$0.position].recordName })
            guard !deletedIn.isEmpty else { return }
            func movedAfterDelete(_ position: Int, _ entity: EntityDescription) -> Bool {
                guard let zone = deletedIn[changed[position].recordName], options.deletePolicy(entity.name) == .deleteWins else { return false }
                return changed[position].zoneID != zone || MovedFrom(fields: changed[position].fields) != nil
            }
            for (position, entity) in fresh where movedAfterDelete(position, entity) {
                let record = changed[position]
                afterSave.append((record.recordName, {
                    try state.setMeta(serverCopy: record, entity: entity.name)
                    try state.enqueue(uuid: record.recordName, entity: entity.name, kind: .delete, zone: record.zoneID, changed: [])
                }))
            }
            fresh.removeAll { movedAfterDelete($0.position, $0.entity) }
        }

        /// Offers the new records to the direct import, parents before children so a child's
        /// relationship finds its parent's row; one it leaves goes through the context save.
        mutating func importFresh() throws {
            let state = state
            fresh.sort { ($0.entity.toOneRelationships.count, $0.position) < ($1.entity.toOneRelationships.count, $1.position) }
            for (position, entity) in fresh {
                let values = position < prepared.count ? prepared[position] : nil
                if try direct.accept(uuid: changed[position].recordName, entity: entity, prepared: values, zone: changed[position].zoneID.key,
                                     linkZone: mapping.linkZone(of: changed[position], store: store, user: me)) {
                    imported.append((position, entity))
                } else {
                    let record = changed[position]
                    local.append(LocalChange(uuid: record.recordName, entity: entity, fields: record.fields, zone: record.zoneID.key,
                                             linkZone: mapping.linkZone(of: record, store: store, user: me)))
                    afterSave.append((record.recordName, { try CoreDataMapping.keepImported(record, entity: entity, state: state) }))
                }
            }
        }

        /// The page's deletions, or held for the fetch's end (`holdDeletes`).
        mutating func applyDeletions(report: inout SyncFetchResult) throws {
            // The zone's share deleted: another device of the owner stopped it, so this device
            // no longer counts the graph as shared (share.create refused it as alreadyShared).
            // A fetch from nil lists no deletion; fetchZone drops the share when it lists none.
            if store.scope == .private, deleted.contains(where: { $0.0 == CloudKitNames.zoneShareName }) {
                try state.dropShare(zone: zone.zoneName)
            }
            if holdDeletes { return try state.holdTombstones(deleted, zone: zone) }
            let state = state
            for (uuid, recordType) in deleted {
                let linkEntity = recordType == MirrorLinkRecords.recordType ? try MirrorLinkRecords.deletedLinkEntity(uuid: uuid, state: state) : nil
                guard let entityName = linkEntity ?? CloudKitNames.entityName(recordType: recordType),
                      let entity = store.model.entity(named: entityName) else { continue }
                if let pending = try state.pending(uuid: uuid), pending.kind != .delete, mapping.options.deletePolicy(entity.name) == .resurrect {
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
        }

        // MARK: Committing

        /// Writes the direct import (recorded through the page's `changes`) and its metadata;
        /// when nothing needs a context save, the page's bookkeeping and `token` too.
        mutating func writeDirect(token: String?, changes: inout StoreChangeRecorder) throws {
            // All history before this import is queued (`ingest`): the export cursor can move
            // past the import's own transaction here rather than in one more commit.
            let cursorIsCurrent = try state.value(MirrorBookkeeping.exportCursorKey) == String(store.lastToken)
            try direct.write(&changes, router: mapping.engine.router, logger: mapping.engine.logger)
            for (position, entity) in imported { try state.setMeta(serverCopy: changed[position], entity: entity.name) }
            try state.dropFieldTimes(imported.map { changed[$0.position].recordName })
            if let imported = changes.token, cursorIsCurrent { try state.setValue(MirrorBookkeeping.exportCursorKey, String(imported)) }
            if local.isEmpty {
                for (_, step) in afterSave { try step() }
                try state.clearUnimportable(settledNames, zone: zone)
                afterSave = []
                try finish(token: token)
            }
        }

        /// Saves the records that need a context, then (in one transaction) the bookkeeping of
        /// those it took, the refusals of those it did not, and `token`.
        func saveThroughContext(storeIndex: Int, stores: StoreSet, token: String?) throws {
            guard !local.isEmpty else { return }
            let refused = try mapping.applyRefusing(local, storeIndex: storeIndex, stores: stores)
            let told: [ImportRefusedNotice] = try mapping.write(store, commit: .deferred) { _ in
                for (uuid, step) in afterSave where refused[uuid] == nil { try step() }
                try state.clearUnimportable(settledNames.filter { refused[$0] == nil }, zone: zone)
                let told = try mapping.keepRefused(refused, of: local, zone: zone, tags: Dictionary(changed.map { ($0.recordName, $0.recordChangeTag) },
                                                                                                    uniquingKeysWith: { $1 }), state: state)
                try finish(token: token)
                return told
            }
            mapping.publishRefused(told)
        }

        /// Strays are queued in the transaction that saves the page's token: a crash cannot
        /// leave the token past a stray that was never queued.
        private func finish(token: String?) throws {
            if store.scope == .private, !changed.isEmpty, try state.knowsOtherZones {
                try mapping.followParents(changed.filter { !known.contains($0.recordName) }, state: state)
            }
            if let token { try state.setValue(MirrorBookkeeping.zoneTokenKey(zone), token) }
        }
    }
}
