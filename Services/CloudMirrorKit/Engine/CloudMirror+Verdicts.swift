import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit

/// A send's verdicts applied: saved entries leave the queue, conflicts merge with the
/// server's copy, refusals revert or wait, per item.
extension CloudMirror {
    /// `answered`: the batch's rows of creates in flight, dropped with the verdicts.
    func applyVerdicts(items: [SendItem], scopeStore: String, verdicts: ModifyVerdicts, errors: [String: WireError],
                               answered: [Int64], report: inout MirrorSendReport, skipped: inout Set<String>,
                               missing: inout [SendItem], touched: inout Set<String>) throws {
        let savedByName = verdicts.saved
        let deletedNames = verdicts.deleted
        var reverts: [(SendItem, WireError)] = []
        var rootsDeleted: [String] = []
        var refusalsCleared: [String] = []
        defer { if !refusalsCleared.isEmpty { progress.withLock { for uuid in refusalsCleared { $0.refusedExports[uuid] = nil } } } }
        try withStores { stores in
            let index = try stores.index(named: scopeStore)
            let store = stores.list[index]
            let state = MirrorBookkeeping(store)
            // A merge reads the row as it is now and the queue entry's edited fields and stamps:
            // a save that landed while the batch was out (automatic mode sends while clients
            // save) is queued first, or the merge saw its values without its entry, took the
            // server's for them, and the edit was lost on every device (automatic kill variant,
            // seed 730).
            if !errors.isEmpty { try ingest(store) }
            var local: [LocalChange] = []
            /// Per merged record, its bookkeeping after the context save, and the server copy it merged with.
            var afterSave: [(uuid: String, server: CloudRecord, step: () throws -> Void)] = []
            // One transaction for the whole batch's verdicts: with synchronous=FULL each
            // autocommit write is an fsync, which made a send cost ~2 ms per record.
            try store.database.transaction(commit: .deferred) {
            try state.dropCreatesInFlight(answered)
            for item in items {
                let uuid = item.pending.uuid
                let error = errors[uuid] ?? errors.first { $0.key.hasSuffix("/\(uuid)") }?.value
                if let record = item.record {
                    if let tag = savedByName[uuid], error == nil {
                        try state.setMeta(.init(uuid: uuid, entity: item.entity.name, zone: record.zoneID, changeTag: tag,
                                                serverFields: nil), fieldsText: item.partial ? try state.serverFields(uuid, applying: item.fieldsText) : item.fieldsText)
                        if item.touch {
                            // The copy it moves from is this device's version: the move goes next.
                            touched.insert(uuid)
                            continue
                        }
                        try state.dropPending(item.pending)
                        report.saved += 1
                        refusalsCleared.append(uuid)
                        continue
                    }
                    guard let error else { skipped.insert(uuid); continue }
                    switch error.code {
                    case .serverRecordChanged, .serverRejectedRequest:
                        guard let conflict = RecordConflict(details: error.details) else { skipped.insert(uuid); continue }
                        let server = conflict.server
                        let row = try Self.currentFields(entity: item.entity, uuid: uuid, state: state)
                        let queued = try state.pending(uuid: uuid)
                        if row == nil, queued?.kind == .delete {
                            // Deleted here while the batch was out: nothing to merge with, and
                            // applying the merge would bring the row back. The server's copy is
                            // what the queued delete now removes (the send's next batch).
                            try state.setMeta(serverCopy: server, entity: item.entity.name, uuid: uuid)
                            report.conflictsResolved += 1
                            continue
                        }
                        // The copy this device knew is the ancestor only in the zone it was
                        // saved to. A save without a tag that met a record there
                        // (serverRejectedRequest: both devices created it, or another moved it
                        // there first) has none: the two are concurrent versions, and every field
                        // either holds is decided by the policy. Counting only the queued fields
                        // as edited let the other device's copy undo an edit this one carried
                        // (an edited record both devices moved, each into another zone).
                        let knownCopy = error.code == .serverRecordChanged ? try state.meta(uuid, withFields: true) : nil
                        let known = knownCopy?.zone == record.zoneID ? knownCopy?.serverFields : nil
                        let ancestor = conflict.ancestor?.fields ?? known
                        // Merge with the row as it is now (a save may have landed since the batch was built).
                        let sent = item.fieldsText.flatMap { try? JSONParser.parse($0).objectValue }
                        let current = CloudRecord(recordName: uuid, zoneID: record.zoneID, recordType: record.recordType,
                                                   fields: row ?? sent ?? [:])
                        let outcome = try merge(server: server, client: current, ancestor: ancestor,
                                                pending: queued ?? item.pending, state: state, everyField: ancestor == nil)
                        local.append(LocalChange(uuid: uuid, entity: item.entity, fields: outcome.fields, zone: server.zoneID.key))
                        // A record saved where it was before a move stays queued even when the
                        // server's copy won: the merged row may still belong in another zone.
                        let keep = outcome.clientWon || item.touch
                        afterSave.append((uuid, server, {
                            try state.setMeta(serverCopy: server, entity: item.entity.name, uuid: uuid)
                            try state.setFieldTimes(uuid, outcome.times)
                            if !keep { try state.dropPending(item.pending) }
                        }))
                        report.conflictsResolved += 1
                        if !keep { skipped.insert(uuid) }
                        if item.touch, try Self.movingElsewhere(server, ancestor: ancestor, entity: item.entity, state: state) {
                            // Its save where it is met another device's save of it there, which
                            // changed what it belongs to, into another zone: that device is
                            // moving it (it saves a record where it is just before moving it).
                            // Saving again and moving at once raced that move, and each left a
                            // copy, one in each zone (automatic moves variant, seed 878). The
                            // move waits for a send after the other device's move has been
                            // fetched: the record then moves on from where that device put it,
                            // if it still must.
                            skipped.insert(uuid)
                            progress.withLock { $0.fetchBeforeSend = true }
                            logger.info("a move waits: another device is moving the record", ["recordName": .string(uuid)])
                        }
                    case .batchRequestFailed:
                        continue
                    case .unknownItem:
                        // Not in that zone any more: another device deleted the record, or moved
                        // it into another zone (sharing its session). The store's changes tell
                        // which, once every batch is answered (`settleMissing`).
                        missing.append(item)
                        skipped.insert(uuid)
                    case .zoneNotFound:
                        if store.scope == .private {
                            progress.withLock { _ = $0.zonesEnsured.remove(record.zoneID.key) }
                            try requeueZone(record.zoneID, state: state)
                        } else {
                            try state.dropPending(item.pending)
                            skipped.insert(uuid)
                        }
                    case .permissionFailure:
                        reverts.append((item, error))
                        skipped.insert(uuid)
                    default:
                        logger.notice("record not saved", ["recordName": .string(uuid), "code": .string(error.code.rawValue), "message": .string(error.message)])
                        progress.withLock {
                            $0.lastError = error
                            $0.refusedExports[uuid] = RefusedExport(recordName: uuid, entity: item.entity.name, store: store.name, error: error)
                        }
                        report.refused += 1
                        skipped.insert(uuid)
                    }
                } else if let zone = item.delete {
                    if deletedNames.contains(uuid) && error == nil {
                        try state.dropMeta(uuid)
                        try state.dropPending(item.pending)
                        try state.rememberDeleted(uuid, zone: zone)
                        if let shareZone = try state.shareZone(ofRoot: uuid), store.scope == .private { rootsDeleted.append(shareZone) }
                        report.deleted += 1
                        refusalsCleared.append(uuid)
                    } else if error?.code == .permissionFailure, let error {
                        reverts.append((item, error))
                        skipped.insert(uuid)
                    } else if error?.code == .zoneNotFound || error?.code == .unknownItem {
                        try state.dropMeta(uuid)
                        try state.dropPending(item.pending)
                    } else if error?.code != .batchRequestFailed {
                        logger.notice("record not deleted", ["recordName": .string(uuid), "zone": .string(zone.key),
                                                             "code": .string(error?.code.rawValue ?? "none")])
                        skipped.insert(uuid)
                    }
                }
            }
            }
            // A merge with a server copy the store refuses (another client wrote a value it
            // cannot hold) leaves the record as it was here, its edit still queued.
            let refused = try applyRefusing(local, storeIndex: index, stores: stores)
            let told = try store.database.transaction(commit: .deferred) { () -> [ImportRefusedNotice] in
                var told: [ImportRefusedNotice] = []
                for (uuid, server, step) in afterSave {
                    guard refused[uuid] != nil else { try step(); continue }
                    told += try keepRefused(refused, of: local.filter { $0.uuid == uuid }, zone: server.zoneID, tags: [uuid: server.recordChangeTag],
                                            state: state)
                }
                return told
            }
            publishRefused(told)
        }
        // The owner deleted a share's root: the share zone goes (its share with it), so
        // participants' next fetch removes the whole zone (scenario 41).
        for zone in rootsDeleted {
            _ = try? request("zones.delete", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: zone)]))
            try withStores { stores in
                if let index = Self.storeIndex(.private, in: stores) { try MirrorBookkeeping(stores.list[index]).dropShare(zone: zone) }
            }
        }
        for (item, error) in reverts {
            try revert(item.pending, entity: item.entity, zone: item.record?.zoneID ?? item.delete, storeName: scopeStore, error: error)
            report.reverted += 1
        }
    }

    /// Merges the server's copy with the local one (docs/RULES.md, mirroring: the per-field merge).
    /// `serverFields`: `server.fields` when the caller already parsed them.
    /// `everyField`: every field either side holds counts as edited here (two concurrent
    /// versions without an ancestor: each differing field is decided by the policy).
    /// `pending` nil: no queue entry says what changed here (two concurrent versions), so every
    /// field counts as edited, as with `everyField`.
    func merge(server: CloudRecord, client: CloudRecord, ancestor: [String: JSONValue]?, pending: MirrorBookkeeping.Pending?,
               state: MirrorBookkeeping, serverFields parsed: [String: JSONValue]?? = nil, everyField: Bool = false) throws -> MirrorMerge.Outcome {
        // Each side's fields read once (fields that came as text are parsed on each read).
        let serverFields = parsed ?? server.fields
        let serverData = MirrorRecordCoding.dataFields(serverFields)
        let clientFields = MirrorRecordCoding.dataFields(client.fields)
        var localChanged = pending.map { $0.kind == .insert ? Set(clientFields.keys).union($0.changed) : $0.changed } ?? []
        if everyField || pending == nil { localChanged.formUnion(Set(clientFields.keys).union(serverData.keys)) }
        return MirrorMerge(policy: options.conflictPolicy).merge(
            server: serverData, serverTimes: MirrorRecordCoding.times(serverFields),
            client: clientFields, clientTimes: try state.fieldTimes(client.recordName),
            ancestor: ancestor.map(MirrorRecordCoding.dataFields), ancestorTimes: MirrorRecordCoding.times(ancestor), localChanged: localChanged)
    }

    /// zoneNotFound (or an encrypted-data reset): every known record of the zone is sent again as new.
    func requeueZone(_ zone: ZoneID, state: MirrorBookkeeping) throws {
        for meta in try state.metas(inZone: zone) {
            // The stamps may live only in the server fields about to be forgotten: kept first.
            if let stamps = try state.fieldTimesText(meta.uuid) { try state.replaceFieldTimes(meta.uuid, text: stamps) }
            var cleared = meta
            cleared.changeTag = nil
            cleared.serverFields = nil
            try state.setMeta(cleared)
            if try state.pending(uuid: meta.uuid) == nil, try state.primaryKey(entity: meta.entity, uuid: meta.uuid) != nil {
                try state.enqueue(uuid: meta.uuid, entity: meta.entity, kind: .insert, zone: nil,
                                  changed: Set((try state.fieldTimes(meta.uuid)).keys))
            }
        }
        try state.setValue(MirrorBookkeeping.zoneTokenKey(zone), nil)
    }

    /// permissionFailure: the server is the authority. An edit goes back to the server's copy; an
    /// insert the server never had is deleted; the device's clients are told (docs/RULES.md, mirroring: permissions checked twice).
    private func revert(_ pending: MirrorBookkeeping.Pending, entity: EntityDescription, zone: ZoneID?, storeName: String, error: WireError) throws {
        var serverCopy: CloudRecord?
        if let zone, pending.kind != .insert {
            let database = try withStores { stores in Self.database(of: stores.list[try stores.index(named: storeName)]) }
            let fetched = try? request("records.fetch", FetchRecordsParams(database: database, recordIDs: [RecordID(recordName: pending.uuid, zoneID: zone)]))
            serverCopy = fetched?["records"]?.arrayValue?.first.flatMap({ CloudRecord(tree: $0) })
        }
        // Parsed once (fields that came as text are parsed on each read).
        let serverFields = serverCopy?.fields
        try withStores { stores in
            let index = try stores.index(named: storeName)
            let state = MirrorBookkeeping(stores.list[index])
            let change = LocalChange(uuid: pending.uuid, entity: entity, fields: serverFields, zone: zone?.zoneName)
            // A server copy the store cannot hold (another client wrote it) cannot be put back:
            // the refused local change still goes (the server will not take it), and the copy is
            // reported like any refused import; failing here failed every send after.
            let refused = try applyRefusing([change], storeIndex: index, stores: stores)
            var told: [ImportRefusedNotice] = []
            try stores.list[index].database.transaction {
                if !refused.isEmpty, let zone {
                    told = try keepRefused(refused, of: [change], zone: zone, tags: [pending.uuid: serverCopy?.recordChangeTag], state: state)
                }
                try state.dropPending(pending.uuid)
                if let serverCopy, let zone {
                    try state.setMeta(serverCopy: serverCopy, entity: entity.name, uuid: pending.uuid, zone: zone)
                    try state.setFieldTimes(pending.uuid, MirrorRecordCoding.times(serverFields))
                } else {
                    try state.dropMeta(pending.uuid)
                }
            }
            publishRefused(told)
        }
        let action = pending.kind == .delete ? "deleteReverted" : (serverCopy == nil ? "insertDeleted" : "updateReverted")
        logger.notice("the server refused a local change; reverted", ["recordName": .string(pending.uuid), "action": .string(action)])
        publishReverted(RevertedNotice(store: storeName, uuid: pending.uuid, entity: entity.name, action: action,
                                       code: error.code.rawValue, reason: error.message))
    }
}
