import CloudWire
import Foundation
import MeowWire
import StoreServiceKit
import StoreWire

/// A send's verdicts: the mapping applies them to the store; what they leave for the cloud
/// (share zones to delete, server copies to revert to) and for `sync.status` is the engine's.
extension MirrorEngine {
    /// `answered`: the batch's rows of creates in flight, dropped with the verdicts.
    func applyVerdicts(items: [SendItem], scopeStore: String, verdicts: ModifyVerdicts, errors: [String: WireError],
                       answered: [Int64], report: inout SyncSendResult, pass: inout SendPass) throws {
        let user = user
        let outcome = try stores.withStore(named: scopeStore) { store -> VerdictOutcome in
            // A merge reads the row as it is now and the queue entry's edited fields and stamps:
            // a save that landed while the batch was out (automatic mode sends while clients
            // save) is queued first, or the merge saw its values without its entry, took the
            // server's for them, and the edit was lost on every device.
            if !errors.isEmpty { try ingest(store) }
            return try mapping.applyVerdicts(verdicts, errors: errors, items: items, answered: answered, to: store, user: user,
                                             report: &report, pass: &pass)
        }
        progress.withLock { state in
            for uuid in outcome.refusalsCleared { state.refusedExports[uuid] = nil }
            for (uuid, refused) in outcome.refused { state.refusedExports[uuid] = refused }
            if let error = outcome.lastRefusal { state.lastError = error }
            for zone in outcome.zonesLost { _ = state.zonesEnsured.remove(zone) }
            if outcome.fetchBeforeSend { state.fetchBeforeSend = true }
        }
        // The owner deleted a share's root: the share zone goes (its share with it), so
        // participants' next fetch removes the whole zone (scenario 41).
        for zone in outcome.rootsDeleted {
            _ = try? request("zones.delete", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: zone)]))
            try stores.withStore(.private) { store in try store.write { try store.bookkeeping.dropShare(zone: zone) } }
        }
        for (item, error) in outcome.reverts {
            try revert(item, storeName: scopeStore, error: error)
            report.reverted += 1
        }
    }

    /// permissionFailure: the server's copy is fetched (none for an insert it never had) and
    /// the mapping puts it back.
    private func revert(_ item: SendItem, storeName: String, error: WireError) throws {
        var serverCopy: CloudRecord?
        if let zone = item.record?.zoneID ?? item.delete, item.pending.kind != .insert {
            let database = try stores.withStore(named: storeName) { $0.database }
            let fetched = try? request("records.fetch", FetchRecordsParams(database: database, recordIDs: [RecordID(recordName: item.pending.uuid, zoneID: zone)]))
            serverCopy = fetched?["records"]?.arrayValue?.first.flatMap({ try? CloudRecord(tree: $0) }).map(mapping.readRecord)
        }
        let user = user
        try stores.withStore(named: storeName) { store in try mapping.revert(item, serverCopy: serverCopy, error: error, in: store, user: user) }
    }
}
