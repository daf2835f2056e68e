import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// A send's verdicts applied: saved entries leave the queue, conflicts merge with the
/// server's copy, refusals revert or wait, per item.
extension CoreDataMapping {
    func applyVerdicts(_ verdicts: ModifyVerdicts, errors: [String: WireError], items: [MirrorEngine.SendItem], answered: [Int64],
                       to store: any MirrorStore, user: String?,
                       report: inout SyncSendResult, pass: inout MirrorEngine.SendPass) throws -> VerdictOutcome {
        let turn = try CoreDataStore.of(store), state = turn.state
        var applied = VerdictApplication(mapping: self, state: state, verdicts: verdicts, errors: errors, user: user)
        // One transaction for the whole batch's verdicts: with synchronous=FULL each
        // autocommit write is an fsync, which made a send cost ~2 ms per record.
        try write(state.store, commit: .deferred) { _ in
            try state.dropCreatesInFlight(answered)
            for item in items { try applied.apply(item, report: &report, pass: &pass) }
        }
        try applied.saveMerges(storeIndex: turn.index, stores: turn.stores)
        return applied.outcome
    }

    /// Merges the server's copy with the local one (docs/RULES.md, mirroring: the per-field merge).
    /// `serverFields`: `server.fields` when the caller already parsed them.
    /// `everyField`: every field either side holds counts as edited here (two concurrent
    /// versions without an ancestor: each differing field is decided by the policy).
    /// `pending` nil: no queue entry says what changed here (two concurrent versions), so every
    /// field counts as edited, as with `everyField`.
    /// `seen`: with no ancestor, the server fields of the version this device last fetched
    /// (`MirrorMerge.merge`).
    func merge(server: CloudRecord, client: CloudRecord, ancestor: [String: JSONValue]?, pending: MirrorBookkeeping.Pending?,
               state: StoreBookkeeping, serverFields parsed: [String: JSONValue]?? = nil, everyField: Bool = false,
               seen: [String: JSONValue]? = nil) throws -> MirrorMerge.Outcome {
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
            ancestor: ancestorData, ancestorTimes: MirrorRecordCoding.times(ancestor), localChanged: localChanged,
            seen: seen.map { (MirrorRecordCoding.dataFields($0), MirrorRecordCoding.times($0)) })
        if serverData != clientFields {
            // The three copies and what was kept: a report shows a conflict from this line alone.
            logger.info("conflict merged", ["recordName": .string(client.recordName), "recordType": .string(server.recordType),
                                            "zone": .string(server.zoneID.key), "policy": .string(options.conflictPolicy.rawValue),
                                            "server": .object(serverData), "client": .object(clientFields),
                                            "ancestor": ancestorData.map { .object($0) } ?? .null, "kept": .object(outcome.fields)])
        }
        return outcome
    }

    func requeueZone(_ zone: ZoneID, in store: any MirrorStore) throws {
        try requeueZone(zone, state: CoreDataStore.of(store).state)
    }

    /// zoneNotFound (or an encrypted-data reset): every known record of the zone is sent again as new.
    func requeueZone(_ zone: ZoneID, state: StoreBookkeeping) throws {
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
    func revert(_ item: MirrorEngine.SendItem, serverCopy: CloudRecord?, error: WireError, in mirrored: any MirrorStore, user: String?) throws {
        let turn = try CoreDataStore.of(mirrored), state = turn.state
        let pending = item.pending
        guard let entity = state.store.model.entity(named: pending.entity) else { return }
        let zone = item.record?.zoneID ?? item.delete
        let store = state.store
        // Parsed once (fields that came as text are parsed on each read).
        let serverFields = serverCopy?.fields
        let change = LocalChange(uuid: pending.uuid, entity: entity, fields: serverFields, zone: zone?.zoneName,
                                 linkZone: serverCopy.flatMap { linkZone(of: $0, store: store, user: user) })
        // A server copy the store cannot hold (another client wrote it) cannot be put back:
        // the refused local change still goes (the server will not take it), and the copy is
        // reported like any refused import; failing here failed every send after.
        let refused = try applyRefusing([change], storeIndex: turn.index, stores: turn.stores)
        var told: [ImportRefusedNotice] = []
        try write(store) { _ in
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
        let action = pending.kind == .delete ? "deleteReverted" : (serverCopy == nil ? "insertDeleted" : "updateReverted")
        logger.notice("the server refused a local change; reverted", ["recordName": .string(pending.uuid), "action": .string(action)])
        publishReverted(RevertedNotice(store: store.name, uuid: pending.uuid, entity: entity.name, action: action,
                                       code: error.code.rawValue, reason: error.message))
    }

    /// Updates the server had no record for that a fetch left where they were (neither moved
    /// nor deleted by another device): the delete policy decides. deleteWins removes the
    /// object here; resurrect forgets the server copy, so the entry goes out as new.
    func settleMissing(_ items: [MirrorEngine.SendItem], in mirrored: any MirrorStore) throws {
        let turn = try CoreDataStore.of(mirrored), state = turn.state, store = turn.store
        var local: [LocalChange] = []
        var afterSave: [() throws -> Void] = []
        for item in items {
            let uuid = item.pending.uuid
            // Left where it was: the same zone and the tag the update was sent with. A record
            // moved away and back meanwhile is in that zone again at a newer tag; the edit
            // merged into it there and goes out (deciding by zone alone deleted it here,
            // and the record stayed behind in a zone its session had left).
            guard let zone = item.record?.zoneID, let meta = try state.meta(uuid), meta.zone == zone,
                  meta.changeTag == item.record?.recordChangeTag, try state.pending(uuid: uuid) != nil else { continue }
            guard let entity = store.model.entity(named: item.pending.entity) else { continue }
            if options.deletePolicy(entity.name) == .resurrect {
                try write(store, commit: .deferred) { _ in try state.forgetServerCopy(uuid) }
            } else {
                local.append(LocalChange(uuid: uuid, entity: entity, fields: nil, zone: nil))
                afterSave.append { try state.dropMeta(uuid); try state.dropPending(item.pending) }
            }
        }
        try applyLocally(local, storeIndex: turn.index, stores: turn.stores)
        try write(store, commit: .deferred) { _ in for step in afterSave { try step() } }
    }
}
