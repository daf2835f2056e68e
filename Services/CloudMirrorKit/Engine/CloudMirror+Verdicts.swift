import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// A send's verdicts applied: saved entries leave the queue, conflicts merge with the
/// server's copy, refusals revert or wait, per item.
extension CloudMirror {
    /// `answered`: the batch's rows of creates in flight, dropped with the verdicts.
    func applyVerdicts(items: [SendItem], scopeStore: String, verdicts: ModifyVerdicts, errors: [String: WireError],
                       answered: [Int64], report: inout SyncSendResult, pass: inout SendPass) throws {
        let applied = try withStores { stores -> VerdictApplication in
            let index = try stores.index(named: scopeStore)
            let store = stores.list[index]
            let state = MirrorBookkeeping(store)
            // A merge reads the row as it is now and the queue entry's edited fields and stamps:
            // a save that landed while the batch was out (automatic mode sends while clients
            // save) is queued first, or the merge saw its values without its entry, took the
            // server's for them, and the edit was lost on every device.
            if !errors.isEmpty { try ingest(store) }
            var applied = VerdictApplication(mirror: self, state: state, verdicts: verdicts, errors: errors)
            // One transaction for the whole batch's verdicts: with synchronous=FULL each
            // autocommit write is an fsync, which made a send cost ~2 ms per record.
            try write(store, commit: .deferred) { _ in
                try state.dropCreatesInFlight(answered)
                for item in items { try applied.apply(item, report: &report, pass: &pass) }
            }
            try applied.saveMerges(storeIndex: index, stores: stores)
            return applied
        }
        if !applied.refusalsCleared.isEmpty {
            progress.withLock { for uuid in applied.refusalsCleared { $0.refusedExports[uuid] = nil } }
        }
        // The owner deleted a share's root: the share zone goes (its share with it), so
        // participants' next fetch removes the whole zone (scenario 41).
        for zone in applied.rootsDeleted {
            _ = try? request("zones.delete", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: zone)]))
            try withStores { stores in
                if let index = Self.storeIndex(.private, in: stores) { try MirrorBookkeeping(stores.list[index]).dropShare(zone: zone) }
            }
        }
        for (item, error) in applied.reverts {
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
        let ancestorData = ancestor.map(MirrorRecordCoding.dataFields)
        let outcome = MirrorMerge(policy: options.conflictPolicy).merge(
            server: serverData, serverTimes: MirrorRecordCoding.times(serverFields),
            client: clientFields, clientTimes: try state.fieldTimes(client.recordName),
            ancestor: ancestorData, ancestorTimes: MirrorRecordCoding.times(ancestor), localChanged: localChanged)
        if serverData != clientFields {
            // The three copies and what was kept: a report shows a conflict from this line alone.
            logger.info("conflict merged", ["recordName": .string(client.recordName), "recordType": .string(server.recordType),
                                            "zone": .string(server.zoneID.key), "policy": .string(options.conflictPolicy.rawValue),
                                            "server": .object(serverData), "client": .object(clientFields),
                                            "ancestor": ancestorData.map { .object($0) } ?? .null, "kept": .object(outcome.fields)])
        }
        return outcome
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
            serverCopy = fetched?["records"]?.arrayValue?.first.flatMap({ try? CloudRecord(tree: $0) }).map(MirrorLinkRecords.incoming)
        }
        // Parsed once (fields that came as text are parsed on each read).
        let serverFields = serverCopy?.fields
        try withStores { stores in
            let index = try stores.index(named: storeName)
            let state = MirrorBookkeeping(stores.list[index])
            let change = LocalChange(uuid: pending.uuid, entity: entity, fields: serverFields, zone: zone?.zoneName,
                                     linkZone: serverCopy.flatMap { linkZone(of: $0, store: stores.list[index]) })
            // A server copy the store cannot hold (another client wrote it) cannot be put back:
            // the refused local change still goes (the server will not take it), and the copy is
            // reported like any refused import; failing here failed every send after.
            let refused = try applyRefusing([change], storeIndex: index, stores: stores)
            var told: [ImportRefusedNotice] = []
            try write(stores.list[index]) { _ in
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
