import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit

/// What one `sync.send` did.
struct MirrorSendReport: Codable, Sendable {
    var saved = 0
    var deleted = 0
    /// Entries merged after serverRecordChanged / serverRejectedRequest.
    var conflictsResolved = 0
    /// Local changes the server refused (permissionFailure) and the device undid.
    var reverted = 0
    /// Entries dropped without a request (their row is gone, or never reached the server).
    var dropped = 0
    /// Entries waiting for a retry-after moment.
    var deferred = 0
    var requests = 0
    var pending = 0
    /// Seconds until the earliest deferred entry may be sent.
    var retryAfterSeconds: Double?
}

extension CloudMirror {
    static let transientCodes: Set<ErrorCode> = [.serviceUnavailable, .requestRateLimited, .zoneBusy]

    /// Sends both stores' queues.
    func sendAll() throws -> MirrorSendReport {
        try signedInCredential()
        var report = MirrorSendReport()
        for scope in [StoreScope.private, .shared] {
            // An export event only when the store has something to send (`send` begins it).
            try event(.export, scope: scope, lazily: true) { event in try send(scope: scope, report: &report, event: event) }
        }
        return report
    }

    /// One outgoing item of a batch.
    private struct Item {
        var pending: MirrorState.Pending
        var entity: EntityDescription
        /// The record to save (nil: a delete); its fields are in `fieldsText`.
        var record: CloudRecord?
        /// The saved record's fields as JSON text (`MirrorRecordCoding.fieldsText`).
        var fieldsText: String?
        /// A delete: of the record itself, or of its old copy when it moves to another zone.
        var delete: ZoneID?
        /// A save of the record where it is, with its tag, before it moves (`buildBatch`).
        var touch = false
        /// `fieldsText` holds only the keys changed here: the server's copy is the kept one with them applied.
        var partial = false
    }

    private struct Batch {
        var storeName: String
        var database: DatabaseScope
        var items: [Item]
        /// Its rows of creates in flight (`MirrorState.recordCreatesInFlight`), dropped with its verdict.
        var createsInFlight: [Int64] = []
        /// The queue position of its last entry.
        var lastSeq: Int64 { items.map(\.pending.seq).max() ?? 0 }
    }

    /// Ingests new history and builds up to `batchesInFlight` next batches of due entries not in
    /// `excluding`, in queue order, from one read of the queue; they are finished (`finishBatch`)
    /// in one turn of the store lock. A device that sends while its clients save gets the lock
    /// between their saves, and each turn waited for a whole save (~30 ms for 1,000 objects):
    /// one batch per turn sent 400 records of each 1,000 saved, and the rest waited until the
    /// saves stopped, with the cloud and the receiving device idle meanwhile.
    /// `after`: the queue is read from past this position (the batches still in flight hold
    /// what comes before; reading them again only to skip them was a tenth of a send).
    /// Empty when there is nothing to send.
    private func nextBatches(scope: StoreScope, excluding: Set<String>, after: Int64 = 0, touched: Set<String>,
                             ahead: inout QueuedAhead?, report: inout MirrorSendReport) throws -> [Batch] {
        let now = clock.seconds()
        let limit = progress.withLock { $0.batchLimit }
        let count = Self.batchesInFlight
        var lookedAgain = false
        while true {
            // History into the queue (a write, under the store lock), unless the last batches'
            // turn queued it: the batches' worth at a time; the rest waits for a later turn.
            let queued: QueuedAhead
            if let known = ahead {
                queued = known
                ahead = nil
            } else {
                guard let fresh = try withStores({ stores -> QueuedAhead? in
                    guard let index = Self.storeIndex(scope, in: stores) else { return nil }
                    let store = stores.list[index]
                    let outcome = try ingest(store, enough: limit * count)
                    return QueuedAhead(store: store, reader: try store.readingCompanion(), queued: outcome.queued, more: outcome.more)
                }) else { return [] }
                queued = fresh
            }
            let store = queued.store
            // The batches are read from a snapshot on the store's reading connection, without the
            // store lock: clients' saves go on meanwhile (building was a fifth of the time a
            // sending device held the lock, and its saves waited for it). A save that lands
            // meanwhile is queued again (a new generation), so a batch carries the row as it
            // was a moment earlier, as if built just before that save. An in-memory store has
            // one connection: its batches are built under the lock, below.
            var drops: [MirrorState.Pending] = []
            func build(_ store: PersistentStore, drops: inout [MirrorState.Pending]) throws -> [[Item]] {
                var built: [[Item]] = []
                var position = after
                while built.count < count {
                    let items = try buildBatch(store: store, now: now, limit: limit, skipped: excluding, after: position, touched: touched,
                                               drops: &drops, report: &report, readThrough: &position)
                    if items.isEmpty { break }
                    built.append(items)
                }
                return built
            }
            let read = try queued.reader.map { reader in try reader.database.readTransaction { try build(reader, drops: &drops) } }
            let finished = try withStores { stores -> ([Batch], QueuedAhead)? in
                // (A store replaced meanwhile: built again from the new one.)
                guard let index = Self.storeIndex(scope, in: stores), stores.list[index] === store else { return nil }
                // One transaction: its dozens of statements per record share one file lock.
                let batches = try store.database.transaction(commit: .deferred) {
                    let built = try read ?? build(store, drops: &drops)
                    try finishDrops(drops, store: store)
                    return try built.map { try finishBatch($0, store: store) }
                }
                // The history saved since is queued in the same turn, for the next batches: a
                // turn of the lock between a client's saves waits for a whole save, and a turn
                // of its own for this took one more wait per batch.
                let outcome = try ingest(store, enough: limit * count)
                return (batches, QueuedAhead(store: store, reader: queued.reader, queued: outcome.queued, more: outcome.more))
            }
            guard let (batches, next) = finished else { continue }
            ahead = next
            if !batches.isEmpty { return batches }
            // What was queued sends nothing (deletes of records never sent, seed 002's
            // strays): look further into the history before saying the queue is done, on while
            // the build's history was left partly unqueued, and once for what this turn queued
            // (saves made meanwhile). Not on for as long as saves come: while every entry they
            // queue is one a batch in flight holds, that would never return to its answers.
            if queued.more { continue }
            if next.queued > 0 && !lookedAgain {
                lookedAgain = true
                continue
            }
            return []
        }
    }

    /// The queue topped up by a send's last turn of the store lock, so the next batches are
    /// built without a turn of their own for it.
    struct QueuedAhead {
        var store: PersistentStore
        var reader: PersistentStore?
        /// What that turn's ingest queued, and whether it left history unqueued.
        var queued: Int
        var more: Bool
    }

    /// The writes built batches need before they go out, under the store lock in one
    /// transaction: the entries the build found nothing to send for leave the queue (each only
    /// if still the version the build read: a newer edit stays queued), and each batch's
    /// creates are recorded as in flight (`finishBatch`).
    private func finishDrops(_ drops: [MirrorState.Pending], store: PersistentStore) throws {
        let state = MirrorState(store)
        for pending in drops { try state.dropPending(pending) }
    }

    private func finishBatch(_ items: [Item], store: PersistentStore) throws -> Batch {
        Batch(storeName: store.name, database: Self.database(of: store), items: items,
              createsInFlight: try Self.recordCreates(of: items, state: MirrorState(store)))
    }

    /// Records the batch's creates (records without a tag: new to the server, or to a zone
    /// they move into) per zone, before the batch goes out.
    private static func recordCreates(of items: [Item], state: MirrorState) throws -> [Int64] {
        var byZone: [ZoneID: [MirrorState.Pending]] = [:]
        for item in items {
            guard let record = item.record, record.recordChangeTag == nil else { continue }
            byZone[record.zoneID, default: []].append(item.pending)
        }
        return try byZone.sorted { $0.key.key < $1.key.key }.map { try state.recordCreatesInFlight($0.value, zone: $0.key) }
    }

    /// Batches built and then not sent (a verdict before them changed the queue) leave nothing in flight.
    private func forgetCreates(of batches: [Batch]) throws {
        for batch in batches where !batch.createsInFlight.isEmpty {
            try dropCreatesInFlight(batch.createsInFlight, store: batch.storeName)
        }
    }

    /// The error of the item a partialFailure is about: the first that is not only
    /// batchRequestFailed (which the other items of an atomic zone get), for an op whose one
    /// request stands for one thing the client asked (share.stop, sync.initializeSchema).
    static func itemAtFault(_ error: WireError) -> WireError? {
        guard error.code == .partialFailure else { return nil }
        let items = (error.details["partialErrors"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.compactMap { try? $0.value.decode(WireError.self) }
        return items.first { $0.code != .batchRequestFailed } ?? items.first
    }

    /// Answers to a lookup that mean the records cannot be there for this device to change.
    static let goneCodes: Set<ErrorCode> = [.zoneNotFound, .userDeletedZone, .unknownItem, .permissionFailure]

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
    private func resolveCreatesInFlight(scope: StoreScope) throws {
        let outstanding = try withStores { stores -> (store: String, database: DatabaseScope, rows: [MirrorState.CreatesInFlight])? in
            guard let index = Self.storeIndex(scope, in: stores) else { return nil }
            let store = stores.list[index]
            let state = MirrorState(store)
            var rows = try state.createsInFlight()
            // Only names whose answer this device never applied: no copy of them in that zone.
            for position in rows.indices {
                let zone = rows[position].zone
                rows[position].entries = try rows[position].entries.filter { try state.meta($0.name)?.zone != zone }
            }
            return rows.isEmpty ? nil : (store.name, Self.database(of: store), rows)
        }
        guard let outstanding else { return }
        var answers: [(row: MirrorState.CreatesInFlight, found: [CloudRecord])] = []
        for row in outstanding.rows {
            var found: [CloudRecord] = []
            if !row.entries.isEmpty {
                let request = FetchRecordsParams(database: outstanding.database,
                                                  recordIDs: row.entries.map { RecordID(recordName: $0.name, zoneID: row.zone) })
                switch attempt("records.fetch", request) {
                case let .success(result):
                    found = (result["records"]?.arrayValue ?? []).compactMap({ CloudRecord(tree: $0) })
                case let .failure(error) where error.code == .partialFailure:
                    found = (error.details["records"]?.arrayValue ?? []).compactMap({ CloudRecord(tree: $0) })
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
            let sent = found.filter { record in row.entries.contains { $0.name == record.recordName } }
            if !sent.isEmpty {
                var applied = MirrorFetchReport()
                try applyPage(sent, prepared: [], deleted: [], zone: row.zone, scope: scope, token: nil, holdDeletes: true, report: &applied)
                logger.info("creates of an unanswered send found on the server", ["zone": .string(row.zone.key), "records": .int(sent.count)])
            }
            if row.entries.contains(where: { entry in !sent.contains { $0.recordName == entry.name } }) {
                unresolved.append(row.id)
            } else {
                try dropCreatesInFlight([row.id], store: outstanding.store)
            }
        }
        guard !unresolved.isEmpty else { return }
        var fetched = MirrorFetchReport()
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
    private func coreDataTokenKnown(for batch: Batch) throws -> Bool? {
        guard batch.database == .private,
              batch.items.contains(where: { $0.record?.recordChangeTag == nil && $0.record?.zoneID == .coreData }) else { return nil }
        let known = try withStores { stores -> Bool in
            guard let index = Self.storeIndex(.private, in: stores) else { return true }
            return try MirrorState(stores.list[index]).value(MirrorState.zoneTokenKey(.coreData)) != nil
        }
        if !known { try ensureZones([.coreData]) }
        return known
    }

    private func dropCreatesInFlight(_ ids: [Int64], store name: String) throws {
        try withStores { stores in
            let store = stores.list[try stores.index(named: name)]
            try store.database.transaction(commit: .deferred) { try MirrorState(store).dropCreatesInFlight(ids) }
        }
    }

    /// One batch sent and not answered yet.
    private struct InFlight {
        var batch: Batch
        var params: ModifyParams
        var waiter: ReplyWaiter
        var names: [String] { batch.items.map(\.pending.uuid) }
    }

    /// A batch's records.modify: each record with its fields text as it was built from the row
    /// (`ModifyParams` writes it as it is), atomic, answered with names and tags alone (the
    /// mirror keeps the fields it sent: a verdict reads nothing else, `applyVerdicts`).
    private static func request(_ batch: Batch) -> ModifyParams {
        var saves: [CloudRecord] = []
        saves.reserveCapacity(batch.items.count)
        for item in batch.items {
            guard var record = item.record, let fields = item.fieldsText else { continue }
            record.fieldsText = fields
            saves.append(record)
        }
        let deletes = batch.items.compactMap { item in item.delete.map { DeleteItem(recordName: item.pending.uuid, zoneID: $0) } }
        return ModifyParams(database: batch.database, saves: saves, deletes: deletes, atomic: true, reply: .tags)
    }

    /// What one batch's answer means for the send.
    private enum Step {
        case next
        /// Merges, reverts or delete rules changed rows (and may have queued records again):
        /// batches built before are dropped and built again from the queue as it is now.
        case rebuild
        case stop(WireError)
    }

    /// How many batches may wait for their answer at once. The connection's requests are
    /// served in order, so the server works on the next batches while the device applies the
    /// verdicts of the one before (with one, a send ran at the sum of the two sides' times;
    /// with two, each side still waited for the other about a fifth of the time).
    static let batchesInFlight = 3

    /// Sends the scope's queue batch by batch, in order. Up to `batchesInFlight` batches are
    /// sent ahead of their answers; each is built from entries no other unanswered batch holds,
    /// so nothing it carries changes with the verdicts of the others, and every answer is
    /// applied in order, even after one that stops the send (a batch the server saved is never
    /// left looking unsent). A verdict that changes rows or the batch size (merges, reverts,
    /// limitExceeded) stops new batches until every sent one is answered; the queue is then read
    /// again from its start, so entries left over go out before later ones (parents before
    /// their children), as without batches in flight.
    /// `settling`: a second pass, for what `settleMissing` queued; it settles without another pass.
    /// `event`: the export event, begun once the send has a batch and a connection.
    private func send(scope: StoreScope, report: inout MirrorSendReport, settling: Bool = false, event: CloudKitEvent? = nil) throws {
        try resolveCreatesInFlight(scope: scope)
        var skipped: Set<String> = []
        /// Updates the server found no record for (unknownItem), settled once every batch is answered.
        var missing: [Item] = []
        var rounds = 0
        var inFlight: [InFlight] = []
        var stopError: WireError?
        var rebuild = false
        /// Records saved where they are in this send, so their move can go out (`buildBatch`).
        var touched: Set<String> = []
        /// Whether this send has settled that it holds Core Data's zone token (`coreDataTokenKnown`).
        var tokenChecked = false
        /// The queue as topped up by the last batches' turn (`nextBatches`).
        var ahead: QueuedAhead?
        /// Batches built and not yet sent, in queue order.
        var upcoming = try nextBatches(scope: scope, excluding: skipped, touched: touched, ahead: &ahead, report: &report)
        // The export begins once there is something to send and the cloud is connected (a
        // connection that cannot be made is the setup's failure, not an export's); the zone made
        // for it, the token fetched before a first create and the batches are all part of it.
        if !upcoming.isEmpty, let event, !event.begun {
            _ = try client()
            event.begin()
        }
        func unanswered() -> Set<String> { Set(inFlight.flatMap(\.names)) }
        // Entries before the last one in flight were all sent in this send, or skipped; any
        // still queued there (a merge the client won) are read once nothing is in flight.
        func readFrom() -> Int64 { inFlight.map(\.batch.lastSeq).max() ?? 0 }
        // Built when none is left to send: as many as may be in flight at once, so that a turn
        // of the store lock between a client's saves finishes up to a save's worth of batches.
        func buildMore() throws -> [Batch] {
            try nextBatches(scope: scope, excluding: skipped.union(unanswered()), after: readFrom(), touched: touched, ahead: &ahead,
                            report: &report)
        }
        while true {
            while stopError == nil, !rebuild, inFlight.count < Self.batchesInFlight, rounds < 10_000, let batch = upcoming.first {
                if !tokenChecked, let known = try coreDataTokenKnown(for: batch) {
                    if !known {
                        // Taken with nothing in flight (the fetch may merge into rows), then the
                        // batches are built again.
                        if !inFlight.isEmpty { break }
                        try forgetCreates(of: upcoming)
                        var fetched = MirrorFetchReport()
                        try fetchZone(.coreData, scope: .private, database: .private, report: &fetched)
                        upcoming = try nextBatches(scope: scope, excluding: skipped, touched: touched, ahead: &ahead, report: &report)
                    }
                    // Once per send: a token once held stays (asking takes the store lock), and a
                    // zone that cannot be fetched does not stop the send.
                    tokenChecked = true
                    if !known { continue }
                }
                rounds += 1
                upcoming.removeFirst()
                if batch.database == .private { try ensureZones(Set(batch.items.compactMap { $0.record?.zoneID })) }
                let params = Self.request(batch)
                report.requests += 1
                inFlight.append(InFlight(batch: batch, params: params, waiter: begin("records.modify", params, read: ModifyVerdicts.init(bytes:))))
                if upcoming.isEmpty { upcoming = try buildMore() }
            }
            guard !inFlight.isEmpty else { break }
            let sent = inFlight.removeFirst()
            let verdict = finish(sent.waiter, "records.modify", sent.params)
            CrashPoint.reached("mirror.afterServerReply")
            // Later batches whose every record was saved are applied with it, in one turn of the
            // store lock: each turn may wait for a client's whole save.
            var batch = sent.batch
            var verdicts = sent.waiter.decoded(as: ModifyVerdicts.self)
            if case .success = verdict, verdicts != nil {
                while let next = inFlight.first, next.waiter.succeeded, let read = next.waiter.decoded(as: ModifyVerdicts.self) {
                    inFlight.removeFirst()
                    _ = finish(next.waiter, "records.modify", next.params)
                    CrashPoint.reached("mirror.afterServerReply")
                    batch.items += next.batch.items
                    batch.createsInFlight += next.batch.createsInFlight
                    verdicts?.merge(read)
                }
            }
            switch try apply(verdict, read: verdicts, of: batch, scope: scope, report: &report, skipped: &skipped, missing: &missing, touched: &touched) {
            case .next:
                // When nothing was left to build, look again: saves made during the send are sent by it too.
                if upcoming.isEmpty, stopError == nil, !rebuild { upcoming = try buildMore() }
            case .rebuild:
                rebuild = true
                try forgetCreates(of: upcoming)
                upcoming = []
            case let .stop(error):
                // The batches already sent are still answered and applied; nothing more is sent.
                stopError = stopError ?? error
                try forgetCreates(of: upcoming)
                upcoming = []
            }
            if rebuild, inFlight.isEmpty {
                rebuild = false
                if stopError == nil {
                    upcoming = try nextBatches(scope: scope, excluding: skipped, touched: touched, ahead: &ahead, report: &report)
                }
            }
        }
        if !missing.isEmpty {
            try settleMissing(missing, scope: scope)
            // What the fetch settled goes out in this send: a moved record's edit to its new
            // zone, a resurrected record as new.
            if stopError == nil, !settling { return try send(scope: scope, report: &report, settling: true) }
        }
        try withStores { stores in
            guard let index = Self.storeIndex(scope, in: stores) else { return }
            // History the send did not get to (it stopped, or saves came meanwhile) is queued:
            // `pending` counts it, and status and the next send see it.
            try ingest(stores.list[index])
            if stopError != nil { return }
            let state = MirrorState(stores.list[index])
            report.pending += try state.pendingCount()
            let now = clock.seconds()
            if let next = try state.earliestDeferral(now: now) {
                report.retryAfterSeconds = min(report.retryAfterSeconds ?? .infinity, next - now)
                report.deferred += try state.allPending().filter { $0.notBefore > now }.count
            }
        }
        if let stopError { throw stopError }
    }

    /// Applies one batch's answer. `read`: its success reply as read from the bytes, if it was.
    private func apply(_ verdict: Result<JSONValue, WireError>, read: ModifyVerdicts?, of batch: Batch, scope: StoreScope,
                       report: inout MirrorSendReport, skipped: inout Set<String>, missing: inout [Item], touched: inout Set<String>) throws -> Step {
        let items = batch.items
        defer { if let observer = sendObserver.withLock({ $0 }) { observer(report.saved) } }
        switch verdict {
        case let .success(result):
            // Every entry saved: only the mirror's metadata changes. (Read from the reply's bytes
            // when it came in the service's form, `ModifyVerdicts(bytes:)`.)
            let verdicts = read ?? ModifyVerdicts(saved: result["saved"], deleted: result["deleted"])
            try applyVerdicts(items: items, scopeStore: batch.storeName, verdicts: verdicts, errors: [:],
                              answered: batch.createsInFlight, report: &report, skipped: &skipped, missing: &missing, touched: &touched)
            // A record saved where it was still moves: its entry is read again.
            return items.contains(where: \.touch) ? .rebuild : .next
        case let .failure(error) where error.code == .partialFailure:
            let errors = (error.details["partialErrors"]?.objectValue ?? [:]).compactMapValues { try? $0.decode(WireError.self) }
            try applyVerdicts(items: items, scopeStore: batch.storeName, verdicts: ModifyVerdicts(saved: error.details["saved"], deleted: error.details["deleted"]),
                              errors: errors, answered: batch.createsInFlight, report: &report, skipped: &skipped, missing: &missing,
                              touched: &touched)
            return .rebuild
        case let .failure(error) where error.code == .limitExceeded:
            let halved = max(1, items.count / 2)
            progress.withLock { $0.batchLimit = min($0.batchLimit, halved) }
            logger.info("limitExceeded: splitting the batch", ["items": .int(items.count), "nextBatch": .int(halved)])
            return items.count == 1 ? .stop(error) : .rebuild
        case let .failure(error) where Self.transientCodes.contains(error.code):
            let retryAfter = error.details["retryAfterSeconds"]?.doubleValue
                ?? progress.withLock { state -> Double in state.backoffSeconds = min(60, max(1, state.backoffSeconds * 2)); return state.backoffSeconds }
            try withStores { stores in
                guard let index = Self.storeIndex(scope, in: stores) else { return }
                try MirrorState(stores.list[index]).deferEntries(items.map(\.pending.uuid), until: clock.seconds() + retryAfter)
            }
            var annotated = error
            annotated.details["deferredItems"] = .int(items.count)
            return .stop(annotated)
        case let .failure(error):
            return .stop(error)
        }
    }

    /// Updates the server answered unknownItem for. Deciding at once by the delete policy lost an
    /// edit whose record another device had moved into a share (deleteWins deleted the row here,
    /// and the fetch brought back the moved copy without the edit). The store's changes are
    /// fetched first: a moved record arrives in its new zone and merges with the queued edit,
    /// which then goes there; a deleted one goes with its tombstone (scenario 20). Only a record
    /// the fetch left where it was meets the delete policy.
    private func settleMissing(_ items: [Item], scope: StoreScope) throws {
        var fetched = MirrorFetchReport()
        try fetchDatabase(scope, report: &fetched)
        try withStores { stores in
            guard let index = Self.storeIndex(scope, in: stores) else { return }
            let store = stores.list[index]
            let state = MirrorState(store)
            var local: [LocalChange] = []
            var afterSave: [() throws -> Void] = []
            for item in items {
                let uuid = item.pending.uuid
                // Left where it was: the same zone and the tag the update was sent with. A record
                // moved away and back meanwhile is in that zone again at a newer tag; the edit
                // merged into it there and goes out (deciding by zone alone deleted it here,
                // and the record stayed behind in a zone its session had left: seed 724).
                guard let zone = item.record?.zoneID, let meta = try state.meta(uuid), meta.zone == zone,
                      meta.changeTag == item.record?.recordChangeTag, try state.pending(uuid: uuid) != nil else { continue }
                if options.deletePolicy(item.entity.name) == .resurrect {
                    try store.database.transaction(commit: .deferred) { try state.forgetServerCopy(uuid) }
                } else {
                    local.append(LocalChange(uuid: uuid, entity: item.entity, fields: nil, zone: nil))
                    afterSave.append { try state.dropMeta(uuid); try state.dropPending(item.pending) }
                }
            }
            try applyLocally(local, storeIndex: index, stores: stores)
            try store.database.transaction(commit: .deferred) { for step in afterSave { try step() } }
        }
    }

    /// Creates the private database zones a batch needs (once per process and zone; again after zoneNotFound).
    func ensureZones(_ zones: Set<ZoneID>) throws {
        let missing = progress.withLock { state in zones.filter { !state.zonesEnsured.contains($0.key) } }
        guard !missing.isEmpty else { return }
        _ = try request("zones.save", ZonesParams(database: .private, zoneIDs: Array(missing)))
        progress.withLock { state in for zone in missing { state.zonesEnsured.insert(zone.key) } }
    }


    /// The due entries of the queue as records, payloads built now from the rows as they are.
    /// Reads the next batch; writes nothing (it may run on the store's reading connection).
    /// `drops`: the entries read that have nothing to send, for `finishBatch` to remove.
    /// `readThrough`: the queue position of the last entry it took (as an item, a drop, or
    /// one to skip); the next batch is read from past it.
    private func buildBatch(store: PersistentStore, now: Double, limit: Int, skipped: Set<String>, after start: Int64,
                            touched: Set<String>, drops: inout [MirrorState.Pending], report: inout MirrorSendReport,
                            readThrough: inout Int64) throws -> [Item] {
        let state = MirrorState(store)
        var items: [Item] = []
        var count = 0
        var after = start
        // Zones of related records (a batch of a session's events asks for one session's zone).
        var zones: [String: ZoneID?] = [:]
        var texts = MirrorRecordCoding.TextCache()
        while count < limit {
            let due = try state.dueEntries(now: now, limit: limit, after: after)
            guard let lastSeq = due.last?.pending.seq else { break }
            after = lastSeq
            for entry in due {
                // Full: the rest of what was read is the next batch's.
                if count >= limit { break }
                readThrough = entry.pending.seq
                if skipped.contains(entry.pending.uuid) { continue }
                let pending = entry.pending
                guard let entity = store.model.entity(named: pending.entity) else { drops.append(pending); continue }
                let meta = entry.meta
                if pending.kind == .delete {
                    guard let meta else {
                        // Never reached the server: nothing to delete there.
                        drops.append(pending)
                        report.dropped += 1
                        continue
                    }
                    items.append(Item(pending: pending, entity: entity, record: nil, fieldsText: nil, delete: meta.zone))
                    count += 1
                    continue
                }
                guard store.holds(entity.name), let row = try Self.row(of: pending, entity: entity, store: store) else {
                    // Scenario 21: the row is gone (its delete follows, or it never existed): upload nothing.
                    drops.append(pending)
                    report.dropped += 1
                    continue
                }
                guard let zone = try zone(for: pending.uuid, entity: entity, row: row, state: state, cache: &zones) else {
                    drops.append(pending)
                    report.dropped += 1
                    continue
                }
                // An update of a record the server has where it stays carries only the keys this
                // device changed (and the stamps): the server keeps the rest, so fields another
                // app version writes, or another device changed meanwhile, are never sent back
                // stale. A new record, a move, or an update whose keys are unknown carries all.
                // An update's changed keys, parsed once (the partial payload and the nulls both need them).
                let edited = meta != nil && pending.kind != .insert ? pending.changed : []
                let only = pending.kind == .update && meta?.zone == zone && !edited.isEmpty ? edited.union([MirrorState.fieldTimesField]) : nil
                var fields = try MirrorRecordCoding.fieldsText(entity: entity, row: row, state: state, timesText: entry.timesText,
                                                               only: only, cache: &texts)
                // The first ordinary save after a move drops the move's bookkeeping field (the
                // server keeps a key a save leaves out).
                let dropped = only != nil && entry.movedFromKept ? [MovedFrom.field] : []
                fields = Self.clearing(edited, entity: entity, row: row, also: dropped, in: fields)
                var record = CloudRecord(recordName: pending.uuid, zoneID: zone, recordType: CloudKitNames.coreDataName(entity.name))
                var move: ZoneID?
                var partial = false
                if let meta {
                    if meta.zone == zone {
                        record.recordChangeTag = meta.changeTag
                        partial = only != nil
                    } else if let tag = meta.changeTag, !touched.contains(pending.uuid) {
                        // A move deletes the old copy unconditionally. It is first saved where it
                        // is, with its tag: another device's edit there since the last fetch
                        // fails it (serverRecordChanged: merged, then moved), and so does a copy
                        // another device moved or deleted meanwhile (unknownItem: the store's
                        // changes are fetched and tell which), rather than a move that deletes
                        // the edit, or leaves a second copy of the record in another zone.
                        record.zoneID = meta.zone
                        record.recordChangeTag = tag
                        items.append(Item(pending: pending, entity: entity, record: record, fieldsText: fields, delete: nil, touch: true))
                        count += 1
                        continue
                    } else {
                        move = meta.zone
                        // The tag it was moved from lets a device whose edit a move deleted
                        // anyway (in the moment between the two) see it (`MovedFrom`).
                        if let tag = meta.changeTag { fields = MovedFrom(zoneName: meta.zone.zoneName, changeTag: tag).adding(to: fields) }
                    }
                }
                items.append(Item(pending: pending, entity: entity, record: record, fieldsText: fields, delete: move, partial: partial))
                count += move == nil ? 1 : 2
            }
            if due.count < limit { break }
        }
        return items
    }

    /// The fields text with a null for each field this update cleared: the server keeps every
    /// key a save leaves out (another app version's fields among them), so a cleared field left
    /// out would keep its old value. Fields nobody changed here are left out, not cleared;
    /// `extra` fields are cleared too.
    static func clearing(_ changed: Set<String>, entity: EntityDescription, row: PersistentStore.StoredRow,
                         also extra: [String] = [], in text: String) -> String {
        let names = entity.storedPropertyNames
        var cleared = extra
        if !changed.isEmpty {
            for (position, value) in row.values.enumerated() where value.isNull && position < names.count {
                let field = MirrorRecordCoding.fieldName(names[position])
                if changed.contains(field) { cleared.append(field) }
            }
        }
        guard !cleared.isEmpty, text.hasSuffix("}") else { return text }
        var out = String(text.dropLast())
        for field in cleared.sorted() {
            if out != "{" { out += "," }
            JSONWriter.appendString(field, to: &out)
            out += ":null"
        }
        return out + "}"
    }

    /// Whether another device changed what the server's copy of a record belongs to (a
    /// relationship differs from the ancestor's), and the object it now relates to is in
    /// another zone on this device: the record belongs elsewhere, and that device moves it.
    /// (A relationship unchanged is no sign: this device may have moved the object itself.)
    private static func movingElsewhere(_ server: CloudRecord, ancestor: [String: JSONValue]?, entity: EntityDescription,
                                        state: MirrorState) throws -> Bool {
        guard let ancestor else { return false }
        let fields = server.fields
        let before = MirrorRecordCoding.relationshipNames(entity: entity, fields: ancestor)
        for (relationship, name) in MirrorRecordCoding.relationshipNames(entity: entity, fields: fields) {
            guard let name, before[relationship] != .some(name) else { continue }
            if let zone = try state.meta(name)?.zone, zone != server.zoneID { return true }
        }
        return false
    }

    /// The row an entry is about: by its primary key when the entry has one (no trip through
    /// the uuid index), checked against its uuid, else by uuid.
    private static func row(of pending: MirrorState.Pending, entity: EntityDescription, store: PersistentStore) throws -> PersistentStore.StoredRow? {
        if let key = pending.primaryKey, let row = try store.read(entity, primaryKey: key), row.uuid == pending.uuid { return row }
        return try store.read(entity, uuid: pending.uuid)
    }

    /// The cloud zone of a record: shared store — the row's share zone; private store — the
    /// zone of the object it belongs to (an event follows its session into a share zone),
    /// else its own known zone, else Core Data's zone.
    func zone(for uuid: String, entity: EntityDescription, state: MirrorState) throws -> ZoneID? {
        var cache: [String: ZoneID?] = [:]
        guard let key = try state.primaryKey(entity: entity.name, uuid: uuid), let row = try state.store.read(entity, primaryKey: key) else {
            return try state.meta(uuid)?.zone
        }
        return try zone(for: uuid, entity: entity, row: row, state: state, cache: &cache)
    }

    private func zone(for uuid: String, entity: EntityDescription, row: PersistentStore.StoredRow, state: MirrorState,
                      cache: inout [String: ZoneID?], depth: Int = 0) throws -> ZoneID? {
        let store = state.store
        if store.scope == .shared {
            return try row.zone.flatMap { try state.shareZone(key: $0) }
        }
        if depth < 4 {
            for (offset, relationship) in entity.toOneRelationships.enumerated() {
                guard let target = row.values[entity.attributes.count + offset].int64,
                      let destination = store.model.entity(named: relationship.destination) else { continue }
                let cacheKey = "\(destination.name)/\(target)"
                if let known = cache[cacheKey] {
                    if let known { return known }
                    continue
                }
                var found: ZoneID?
                if let targetUUID = try state.uuid(entity: destination.name, primaryKey: target),
                   let targetRow = try store.read(destination, primaryKey: target) {
                    found = try zone(for: targetUUID, entity: destination, row: targetRow, state: state, cache: &cache, depth: depth + 1)
                }
                cache[cacheKey] = .some(found)
                if let found { return found }
            }
        }
        return try state.meta(uuid)?.zone ?? .coreData
    }

    // MARK: Verdicts

    /// `answered`: the batch's rows of creates in flight, dropped with the verdicts.
    private func applyVerdicts(items: [Item], scopeStore: String, verdicts: ModifyVerdicts, errors: [String: WireError],
                               answered: [Int64], report: inout MirrorSendReport, skipped: inout Set<String>,
                               missing: inout [Item], touched: inout Set<String>) throws {
        let savedByName = verdicts.saved
        let deletedNames = verdicts.deleted
        var reverts: [(Item, WireError)] = []
        var rootsDeleted: [String] = []
        try withStores { stores in
            let index = try stores.index(named: scopeStore)
            let store = stores.list[index]
            let state = MirrorState(store)
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
                        progress.withLock { $0.lastError = error }
                        skipped.insert(uuid)
                    }
                } else if let zone = item.delete {
                    if deletedNames.contains(uuid) && error == nil {
                        try state.dropMeta(uuid)
                        try state.dropPending(item.pending)
                        try state.rememberDeleted(uuid, zone: zone)
                        if let shareZone = try state.shareZone(ofRoot: uuid), store.scope == .private { rootsDeleted.append(shareZone) }
                        report.deleted += 1
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
                if let index = Self.storeIndex(.private, in: stores) { try MirrorState(stores.list[index]).dropShare(zone: zone) }
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
    func merge(server: CloudRecord, client: CloudRecord, ancestor: [String: JSONValue]?, pending: MirrorState.Pending?,
               state: MirrorState, serverFields parsed: [String: JSONValue]?? = nil, everyField: Bool = false) throws -> MirrorMerge.Outcome {
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
    func requeueZone(_ zone: ZoneID, state: MirrorState) throws {
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
        try state.setValue(MirrorState.zoneTokenKey(zone), nil)
    }

    /// permissionFailure: the server is the authority. An edit goes back to the server's copy; an
    /// insert the server never had is deleted; the device's clients are told (docs/RULES.md, mirroring: permissions checked twice).
    private func revert(_ pending: MirrorState.Pending, entity: EntityDescription, zone: ZoneID?, storeName: String, error: WireError) throws {
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
            let state = MirrorState(stores.list[index])
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
