import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// Creates whose answer never came (a lost reply, a crash): before a send, each is found in the
/// cloud or not, so it is neither sent twice nor lost.
extension MirrorEngine {
    /// Creates an earlier send made without applying their answer (the answer was lost, or the
    /// device was killed first) may be on the server. The server is asked, and what it has is
    /// applied like a fetched change (merged with the row and its queue entry): an entry the
    /// server already has leaves the queue, a newer one goes out as an update or delete of that
    /// record, never as a delete dropped for "never sent", which left the record in the cloud
    /// to come back to every device. A create the server does not have either never got
    /// there or got there and was deleted since by another device: the store's changes are
    /// fetched first, and a tombstone among them removes the object and its queued create
    /// (which would otherwise go out again and bring the record back). Runs before a send
    /// builds its first batch.
    func resolveCreatesInFlight(scope: StoreScope) throws {
        let outstanding = try stores.withStore(scope) { store -> (store: String, database: DatabaseScope, rows: [MirrorBookkeeping.CreatesInFlight])? in
            let state = store.bookkeeping
            var rows = try state.createsInFlight()
            // Only names whose answer this device never applied: no copy of them in that zone.
            for position in rows.indices {
                let zone = rows[position].zone
                rows[position].entries = try rows[position].entries.filter { try state.meta($0.name)?.zone != zone }
            }
            return rows.isEmpty ? nil : (store.name, store.database, rows)
        } ?? nil
        guard let outstanding else { return }
        var answers: [(row: MirrorBookkeeping.CreatesInFlight, found: [CloudRecord])] = []
        for row in outstanding.rows {
            var found: [CloudRecord] = []
            if !row.entries.isEmpty {
                let request = FetchRecordsParams(database: outstanding.database,
                                                  recordIDs: row.entries.map { RecordID(recordName: $0.name, zoneID: row.zone) })
                switch attempt("records.fetch", request) {
                case let .success(result):
                    found = (result["records"]?.arrayValue ?? []).compactMap({ try? CloudRecord(tree: $0) })
                case let .failure(error) where error.code == .partialFailure:
                    found = (error.details["records"]?.arrayValue ?? []).compactMap({ try? CloudRecord(tree: $0) })
                case let .failure(error) where Self.goneCodes.contains(error.code):
                    // The zone or the access is gone: so is anything of it to update or delete.
                    found = []
                case let .failure(error):
                    throw error
                }
            }
            answers.append((row, found))
        }
        // What the server has is applied as a fetched change would be: merged with the local
        // row (another device may have edited it since), so the row, its queue entry and the
        // kept server copy agree. Keeping the server's copy without applying it left this
        // device's row behind that copy's tag, and its next edit overwrote the other device's.
        // The rows naming creates the server lacks stay until the fetch below has run, so a
        // fetch that fails leaves them to be asked about again.
        var unresolved: [Int64] = []
        for (row, found) in answers {
            // Read as a fetch reads them: a CDMR record becomes its link's record.
            let sent = found.map(mapping.readRecord).filter { record in row.entries.contains { $0.name == record.recordName } }
            if !sent.isEmpty {
                var applied = SyncFetchResult()
                try applyPage(ZonePage(changed: sent, prepared: [], deleted: [], zone: row.zone, token: nil, holdDeletes: true), scope: scope, report: &applied)
                logger.info("creates of an unanswered send found on the server", ["zone": .string(row.zone.key), "records": .int(sent.count)])
            }
            if row.entries.contains(where: { entry in !sent.contains { $0.recordName == entry.name } }) {
                unresolved.append(row.id)
            } else {
                try dropCreatesInFlight([row.id], store: outstanding.store)
            }
        }
        guard !unresolved.isEmpty else { return }
        var fetched = SyncFetchResult()
        try fetchDatabase(scope, report: &fetched)
        try dropCreatesInFlight(unresolved, store: outstanding.store)
    }

    /// A create whose answer was lost is asked for on the server, and when the server does not
    /// have it, a fetch tells a record deleted since from one that never arrived
    /// (`resolveCreatesInFlight`). Only a fetch from a token reports deletions: a device that
    /// had never fetched could not tell, and sent the create again, bringing back a record
    /// another device had deleted. So a batch that creates records in Core Data's zone waits
    /// until the device holds that zone's token (its zone is made first if need be, and what
    /// it holds is received).
    /// Nil: the batch creates nothing in Core Data's zone; else whether the device holds the
    /// zone's token (when it does not, the zone is made if need be).
    func coreDataTokenKnown(for batch: Batch) throws -> Bool? {
        guard batch.database == .private,
              batch.items.contains(where: { $0.record?.recordChangeTag == nil && $0.record?.zoneID == .coreData }) else { return nil }
        let known = try stores.withStore(.private) { store in
            try store.bookkeeping.value(MirrorBookkeeping.zoneTokenKey(.coreData)) != nil
        } ?? true
        if !known { try ensureZones([.coreData]) }
        return known
    }

    func dropCreatesInFlight(_ ids: [Int64], store name: String) throws {
        try stores.withStore(named: name) { store in
            try store.write(commit: .deferred) { try store.bookkeeping.dropCreatesInFlight(ids) }
        }
    }
}
