import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

extension CoreDataMapping {
    /// One batch's verdicts on their way into the store (`applyVerdicts`), item by item inside
    /// the batch's transaction: what a conflict merged (saved through a context afterwards,
    /// `local`, with each record's bookkeeping after it), and what waits for after the
    /// transaction (reverts, share roots deleted, refusals to forget).
    struct VerdictApplication {
        let mapping: CoreDataMapping
        let state: StoreBookkeeping
        let verdicts: ModifyVerdicts
        let errors: [String: WireError]
        /// The signed-in user (`linkZone(of:store:user:)`).
        let user: String?
        var store: PersistentStore { state.store }

        var local: [LocalChange] = []
        /// Per merged record, its bookkeeping after the context save, and the server copy it merged with.
        var afterSave: [(uuid: String, server: CloudRecord, step: () throws -> Void)] = []
        var outcome = VerdictOutcome()

        /// Applies `item`'s verdict; the send's report and pass take what it adds.
        mutating func apply(_ item: MirrorEngine.SendItem, report: inout SyncSendResult, pass: inout MirrorEngine.SendPass) throws {
            let uuid = item.pending.uuid
            let error = errors[uuid] ?? errors.first { $0.key.hasSuffix("/\(uuid)") }?.value
            if let record = item.record {
                // Its batch was built from the model's entities: one it no longer knows has nothing to apply.
                guard let entity = store.model.entity(named: item.pending.entity) else { pass.skipped.insert(uuid); return }
                try applySave(item, entity: entity, record: record, error: error, report: &report, pass: &pass)
            } else if let zone = item.delete {
                try applyDelete(item, zone: zone, error: error, report: &report, pass: &pass)
            }
        }

        private mutating func applySave(_ item: MirrorEngine.SendItem, entity: EntityDescription, record: CloudRecord, error: WireError?, report: inout SyncSendResult, pass: inout MirrorEngine.SendPass) throws {
            let uuid = item.pending.uuid
            if let tag = verdicts.saved[uuid], error == nil {
                try state.setMeta(.init(uuid: uuid, entity: entity.name, zone: record.zoneID, changeTag: tag,
                                        serverFields: nil), fieldsText: item.partial ? try state.serverFields(uuid, applying: item.fieldsText) : item.fieldsText)
                for link in item.clearedLinks { try PendingLinks(database: store.database).forget(link) }
                if item.touch {
                    // The copy it moves from is this device's version: the move goes next.
                    pass.touched.insert(uuid)
                    return
                }
                try state.dropPending(item.pending)
                report.saved += 1
                outcome.refusalsCleared.append(uuid)
                return
            }
            guard let error else { pass.skipped.insert(uuid); return }
            switch error.code {
            case .serverRecordChanged, .serverRejectedRequest:
                guard let conflict = RecordConflict(details: error.details).map(MirrorLinkRecords.incoming) else { pass.skipped.insert(uuid); return }
                try mergeConflict(item, entity: entity, record: record, conflict: conflict, code: error.code, report: &report, pass: &pass)
            case .batchRequestFailed:
                return
            case .unknownItem:
                // Not in that zone any more: another device deleted the record, or moved
                // it into another zone (sharing its session). The store's changes tell
                // which, once every batch is answered (`settleMissing`).
                pass.missing.append(item)
                pass.skipped.insert(uuid)
            case .zoneNotFound:
                if store.scope == .private {
                    outcome.zonesLost.append(record.zoneID.key)
                    try mapping.requeueZone(record.zoneID, state: state)
                } else {
                    try state.dropPending(item.pending)
                    pass.skipped.insert(uuid)
                }
            case .permissionFailure:
                outcome.reverts.append((item, error))
                pass.skipped.insert(uuid)
            default:
                mapping.logger.notice("record not saved", ["recordName": .string(uuid), "code": .string(error.code.rawValue), "message": .string(error.message)])
                outcome.lastRefusal = error
                outcome.refused[uuid] = RefusedExport(recordName: uuid, entity: entity.name, store: store.name, error: error)
                report.refused += 1
                pass.skipped.insert(uuid)
            }
        }

        /// A save that met another version of the record: merged with the server's copy (saved
        /// through a context after the batch's transaction).
        private mutating func mergeConflict(_ item: MirrorEngine.SendItem, entity: EntityDescription, record: CloudRecord, conflict: RecordConflict, code: ErrorCode,
                                            report: inout SyncSendResult, pass: inout MirrorEngine.SendPass) throws {
            let uuid = item.pending.uuid
            let state = state
            let server = conflict.server
            let row = try CoreDataMapping.currentFields(entity: entity, uuid: uuid, state: state)
            let queued = try state.pending(uuid: uuid)
            if row == nil, queued?.kind == .delete {
                // Deleted here while the batch was out: nothing to merge with, and
                // applying the merge would bring the row back. The server's copy is
                // what the queued delete now removes (the send's next batch).
                try state.setMeta(serverCopy: server, entity: entity.name, uuid: uuid)
                report.conflictsResolved += 1
                return
            }
            // The copy this device knew is the ancestor only in the zone it was
            // saved to. A save without a tag that met a record there
            // (serverRejectedRequest: both devices created it, or another moved it
            // there first) has none: the two are concurrent versions, and every field
            // either holds is decided by the policy. Counting only the queued fields
            // as edited let the other device's copy undo an edit this one carried
            // (an edited record both devices moved, each into another zone).
            let knownCopy = code == .serverRecordChanged ? try state.meta(uuid, withFields: true) : nil
            let known = knownCopy?.zone == record.zoneID ? knownCopy?.serverFields : nil
            let ancestor = conflict.ancestor?.fields ?? known
            // Merge with the row as it is now (a save may have landed since the batch was built).
            let sent = item.fieldsText.flatMap { try? JSONParser.parse($0).objectValue }
            let current = CloudRecord(recordName: uuid, zoneID: record.zoneID, recordType: record.recordType,
                                       fields: row ?? sent ?? [:])
            let outcomeOfMerge = try mapping.merge(server: server, client: current, ancestor: ancestor,
                                                  pending: queued ?? item.pending, state: state, everyField: ancestor == nil)
            local.append(LocalChange(uuid: uuid, entity: entity, fields: outcomeOfMerge.fields, zone: server.zoneID.key,
                                     linkZone: mapping.linkZone(of: server, store: state.store, user: user)))
            // A record saved where it was before a move stays queued even when the
            // server's copy won: the merged row may still belong in another zone.
            let keep = outcomeOfMerge.clientWon || item.touch
            afterSave.append((uuid, server, {
                try state.setMeta(serverCopy: server, entity: entity.name, uuid: uuid)
                try state.setFieldTimes(uuid, outcomeOfMerge.times)
                if !keep { try state.dropPending(item.pending) }
            }))
            report.conflictsResolved += 1
            if !keep { pass.skipped.insert(uuid) }
            if item.touch, try CoreDataMapping.movingElsewhere(server, ancestor: ancestor, entity: entity, state: state) {
                // Its save where it is met another device's save of it there, which
                // changed what it belongs to, into another zone: that device is
                // moving it (it saves a record where it is just before moving it).
                // Saving again and moving at once raced that move, and each left a
                // copy, one in each zone. The
                // move waits for a send after the other device's move has been
                // fetched: the record then moves on from where that device put it,
                // if it still must.
                pass.skipped.insert(uuid)
                outcome.fetchBeforeSend = true
                mapping.logger.info("a move waits: another device is moving the record", ["recordName": .string(uuid)])
            }
        }

        private mutating func applyDelete(_ item: MirrorEngine.SendItem, zone: ZoneID, error: WireError?, report: inout SyncSendResult, pass: inout MirrorEngine.SendPass) throws {
            let uuid = item.pending.uuid
            if verdicts.deleted.contains(uuid) && error == nil {
                try state.dropMeta(uuid)
                try state.dropPending(item.pending)
                try state.rememberDeleted(uuid, zone: zone)
                if let shareZone = try state.shareZone(ofRoot: uuid), store.scope == .private { outcome.rootsDeleted.append(shareZone) }
                report.deleted += 1
                outcome.refusalsCleared.append(uuid)
            } else if error?.code == .permissionFailure, let error {
                outcome.reverts.append((item, error))
                pass.skipped.insert(uuid)
            } else if error?.code == .zoneNotFound || error?.code == .unknownItem {
                try state.dropMeta(uuid)
                try state.dropPending(item.pending)
            } else if error?.code != .batchRequestFailed {
                mapping.logger.notice("record not deleted", ["recordName": .string(uuid), "zone": .string(zone.key),
                                                            "code": .string(error?.code.rawValue ?? "none")])
                pass.skipped.insert(uuid)
            }
        }

        /// Saves the merges through a context. A merge with a server copy the store refuses
        /// (another client wrote a value it cannot hold) leaves the record as it was here, its
        /// edit still queued.
        func saveMerges(storeIndex: Int, stores: StoreSet) throws {
            let refused = try mapping.applyRefusing(local, storeIndex: storeIndex, stores: stores)
            let told: [ImportRefusedNotice] = try mapping.write(store, commit: .deferred) { _ in
                var told: [ImportRefusedNotice] = []
                for (uuid, server, step) in afterSave {
                    guard refused[uuid] != nil else { try step(); continue }
                    told += try mapping.keepRefused(refused, of: local.filter { $0.uuid == uuid }, zone: server.zoneID, tags: [uuid: server.recordChangeTag],
                                                   state: state)
                }
                return told
            }
            mapping.publishRefused(told)
        }
    }
}
