import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

extension MirrorEngine {
    /// Sends both stores' queues.
    func sendAll() throws -> SyncSendResult {
        try signedInCredential()
        var report = SyncSendResult()
        for scope in [StoreScope.private, .shared] {
            // An export event only when the store has something to send (`send` begins it).
            try event(.export, scope: scope, lazily: true) { event in
                let refused = report.refused
                try send(scope: scope, report: &report, event: event)
                // As NSPersistentCloudKitContainer's export event ends with CloudKit's partialFailure.
                if report.refused > refused { event?.partialFailure = refusedExportsError(scope: scope) }
            }
        }
        return report
    }

    /// One outgoing item of a batch.
    struct SendItem {
        /// Its queue entry (the record's name and entity, the change it carries).
        var pending: MirrorBookkeeping.Pending
        /// The record to save (nil: a delete), its fields as their text (`fieldsText`): the
        /// batch's request sends this record as it is, sharing its storage (a record changed
        /// there would be copied first).
        var record: CloudRecord?
        /// A delete: of the record itself, or of its old copy when it moves to another zone.
        var delete: ZoneID?
        /// A save of the record where it is, with its tag, before it moves (`buildBatches`).
        var touch = false
        /// `fieldsText` holds only the keys changed here: the server's copy is the kept one with them applied.
        var partial = false
        /// Relationships it sends empty because this device refused the names the cloud holds
        /// for them (`MirrorBookkeeping.zoneRefusedLinks`): once saved they wait no more.
        var clearedLinks: [PendingLinks.Link] = []

        /// The saved record's fields as JSON text (`MirrorRecordCoding.fieldsText`).
        var fieldsText: String? { record?.fieldsText }
    }

    struct Batch {
        var storeName: String
        var database: DatabaseScope
        var items: [SendItem]
        /// Its rows of creates in flight (`MirrorBookkeeping.recordCreatesInFlight`), dropped with its verdict.
        var createsInFlight: [Int64] = []
        /// The queue position of its last entry.
        var lastSeq: Int64 { items.map(\.pending.seq).max() ?? 0 }
        /// The zones its saves go to. A batch's items mostly share one zone: a run of them is
        /// compared, not hashed item by item.
        var zones: Set<ZoneID> {
            var zones = Set<ZoneID>()
            var last: ZoneID?
            for item in items {
                guard let zone = item.record?.zoneID, zone != last else { continue }
                zones.insert(zone)
                last = zone
            }
            return zones
        }
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
                             ahead: inout QueuedAhead?, report: inout SyncSendResult) throws -> [Batch] {
        let now = clock.seconds()
        let sizing = progress.withLock { $0.batchSizing }
        let limit = sizing.limit
        let count = BatchSizing.inFlight
        var lookedAgain = false
        while true {
            // History into the queue (a write, under the store lock), unless the last batches'
            // turn queued it: the batches' worth at a time; the rest waits for a later turn.
            let queued: QueuedAhead
            if let known = ahead {
                queued = known
                ahead = nil
            } else {
                guard let fresh = try stores.withStore(scope, { store -> QueuedAhead in
                    let outcome = try mapping.queueHistory(of: store, enough: sizing.queueAhead)
                    return QueuedAhead(store: store, reader: try store.reader(), queued: outcome.queued, more: outcome.more)
                }) else { return [] }
                queued = fresh
            }
            // The batches are read from a snapshot on the store's reading connection, without the
            // store lock: clients' saves go on meanwhile (building was a fifth of the time a
            // sending device held the lock, and its saves waited for it). A save that lands
            // meanwhile is queued again (a new generation), so a batch carries the row as it
            // was a moment earlier, as if built just before that save. An in-memory store has
            // one connection: its batches are built under the lock, below.
            var drops: [MirrorBookkeeping.Pending] = []
            func build(_ store: any MirrorStore, drops: inout [MirrorBookkeeping.Pending]) throws -> [[SendItem]] {
                try mapping.buildBatches(from: store, now: now, limit: limit, count: count, skipped: excluding, after: after, touched: touched,
                                         drops: &drops, report: &report)
            }
            let read = try queued.reader.map { reader in try reader.readSnapshot { try build(reader, drops: &drops) } }
            let finished = try stores.withStore(scope) { store -> ([Batch], QueuedAhead)? in
                // (A store replaced meanwhile: built again from the new one.)
                guard store.isSame(as: queued.store) else { return nil }
                // One transaction: its dozens of statements per record share one file lock.
                let batches = try store.write(commit: .deferred) {
                    let built = try read ?? build(store, drops: &drops)
                    try finishDrops(drops, store: store)
                    return try built.map { try finishBatch($0, store: store) }
                }
                // The history saved since is queued in the same turn, for the next batches: a
                // turn of the lock between a client's saves waits for a whole save, and a turn
                // of its own for this took one more wait per batch.
                let outcome = try mapping.queueHistory(of: store, enough: sizing.queueAhead)
                return (batches, QueuedAhead(store: store, reader: queued.reader, queued: outcome.queued, more: outcome.more))
            } ?? nil
            guard let (batches, next) = finished else { continue }
            ahead = next
            if !batches.isEmpty { return batches }
            // What was queued sends nothing (deletes of records never sent, shared-store
            // objects in no share zone): look further into the history before saying the queue is done, on while
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
        var store: any MirrorStore
        var reader: (any MirrorStore)?
        /// What that turn's ingest queued, and whether it left history unqueued.
        var queued: Int
        var more: Bool
    }

    /// The writes built batches need before they go out, under the store lock in one
    /// transaction: the entries the build found nothing to send for leave the queue (each only
    /// if still the version the build read: a newer edit stays queued), and each batch's
    /// creates are recorded as in flight (`finishBatch`).
    private func finishDrops(_ drops: [MirrorBookkeeping.Pending], store: any MirrorStore) throws {
        let state = store.bookkeeping
        for pending in drops { try state.dropPending(pending) }
    }

    private func finishBatch(_ items: [SendItem], store: any MirrorStore) throws -> Batch {
        Batch(storeName: store.name, database: store.database, items: items,
              createsInFlight: try Self.recordCreates(of: items, state: store.bookkeeping))
    }

    /// Records the batch's creates (records without a tag: new to the server, or to a zone
    /// they move into) per zone, before the batch goes out.
    private static func recordCreates(of items: [SendItem], state: MirrorBookkeeping) throws -> [Int64] {
        var byZone: [ZoneID: [MirrorBookkeeping.Pending]] = [:]
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

    /// One batch sent and not answered yet.
    fileprivate struct InFlight {
        var batch: Batch
        var params: ModifyParams
        var waiter: ReplyWaiter
    }

    /// A batch's records.modify: each record with its fields text as it was built from the row
    /// (`ModifyParams` writes it as it is), atomic, answered with names and tags alone (the
    /// mirror keeps the fields it sent: a verdict reads nothing else, `applyVerdicts`).
    private func request(_ batch: Batch) -> ModifyParams {
        var saves: [CloudRecord] = []
        saves.reserveCapacity(batch.items.count)
        for item in batch.items {
            guard let record = item.record else { continue }
            saves.append(mapping.wireRecord(record))
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

    /// One send of a scope's queue: the batches built and not sent, those sent and not
    /// answered, and what the answers so far decided. The send's steps (`launch`, `answerNext`)
    /// share it, so each reads as one move of the pipeline.
    struct SendPass {
        var skipped: Set<String> = []
        /// Updates the server found no record for (unknownItem), settled once every batch is answered.
        var missing: [SendItem] = []
        var rounds = 0
        fileprivate var inFlight: [InFlight] = []
        /// Set by an answer that ends the send: the batches already sent are still applied.
        var stopError: WireError?
        /// Set by an answer that changed rows: nothing more goes out until every sent batch is
        /// answered, then the queue is read again from its start.
        var rebuild = false
        /// Records saved where they are in this send, so their move can go out (`buildBatches`).
        var touched: Set<String> = []
        /// Whether this send has settled that it holds Core Data's zone token (`coreDataTokenKnown`).
        var tokenChecked = false
        /// The queue as topped up by the last batches' turn (`nextBatches`).
        var ahead: QueuedAhead?
        /// Batches built and not yet sent, in queue order.
        var upcoming: [Batch] = []

        /// The skipped entries and those of every batch in flight: a build takes none of them.
        /// One pass over the batches in flight, each name hashed once: a build after each answer
        /// reads them all.
        var excluded: Set<String> {
            var excluded = skipped
            for flight in inFlight {
                for item in flight.batch.items { excluded.insert(item.pending.uuid) }
            }
            return excluded
        }
        /// Entries before the last one in flight were all sent in this send, or skipped; any
        /// still queued there (a merge the client won) are read once nothing is in flight.
        var readFrom: Int64 { inFlight.map(\.batch.lastSeq).max() ?? 0 }
        var mayLaunch: Bool { stopError == nil && !rebuild && inFlight.count < BatchSizing.inFlight && rounds < 10_000 }
    }

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
    private func send(scope: StoreScope, report: inout SyncSendResult, settling: Bool = false, event: CloudKitEvent? = nil) throws {
        try resolveCreatesInFlight(scope: scope)
        var pass = SendPass()
        try readQueueAgain(&pass, scope: scope, report: &report)
        // The export begins once there is something to send and the cloud is connected (a
        // connection that cannot be made is the setup's failure, not an export's); the zone made
        // for it, the token fetched before a first create and the batches are all part of it.
        if !pass.upcoming.isEmpty, let event, !event.begun {
            _ = try client()
            event.begin()
        }
        while true {
            try launch(&pass, scope: scope, report: &report)
            guard !pass.inFlight.isEmpty else { break }
            try answerNext(&pass, scope: scope, report: &report)
        }
        if !pass.missing.isEmpty {
            try settleMissing(pass.missing, scope: scope)
            // What the fetch settled goes out in this send: a moved record's edit to its new
            // zone, a resurrected record as new.
            if pass.stopError == nil, !settling { return try send(scope: scope, report: &report, settling: true) }
        }
        try countLeftOver(scope: scope, stopped: pass.stopError != nil, report: &report)
        if let stopError = pass.stopError { throw stopError }
    }

    /// Batches from the start of the queue, none of the skipped entries.
    private func readQueueAgain(_ pass: inout SendPass, scope: StoreScope, report: inout SyncSendResult) throws {
        pass.upcoming = try nextBatches(scope: scope, excluding: pass.skipped, touched: pass.touched, ahead: &pass.ahead, report: &report)
    }

    /// Built when none is left to send: as many as may be in flight at once, so that a turn of
    /// the store lock between a client's saves finishes up to a save's worth of batches.
    private func buildMore(_ pass: inout SendPass, scope: StoreScope, report: inout SyncSendResult) throws {
        pass.upcoming = try nextBatches(scope: scope, excluding: pass.excluded, after: pass.readFrom,
                                        touched: pass.touched, ahead: &pass.ahead, report: &report)
    }

    /// Sends built batches until as many as may be are in flight (or the send may send no more).
    private func launch(_ pass: inout SendPass, scope: StoreScope, report: inout SyncSendResult) throws {
        while pass.mayLaunch, let batch = pass.upcoming.first {
            if !pass.tokenChecked, let known = try coreDataTokenKnown(for: batch) {
                if !known {
                    // Taken with nothing in flight (the fetch may merge into rows), then the
                    // batches are built again.
                    if !pass.inFlight.isEmpty { return }
                    try forgetCreates(of: pass.upcoming)
                    var fetched = SyncFetchResult()
                    try fetchZone(.coreData, scope: .private, database: .private, report: &fetched)
                    try readQueueAgain(&pass, scope: scope, report: &report)
                }
                // Once per send: a token once held stays (asking takes the store lock), and a
                // zone that cannot be fetched does not stop the send.
                pass.tokenChecked = true
                if !known { continue }
            }
            pass.rounds += 1
            pass.upcoming.removeFirst()
            if batch.database == .private { try ensureZones(batch.zones) }
            let params = request(batch)
            report.requests += 1
            pass.inFlight.append(InFlight(batch: batch, params: params, waiter: begin("records.modify", params, read: { bytes in try? ModifyVerdicts.read(bytes) })))
            if pass.upcoming.isEmpty { try buildMore(&pass, scope: scope, report: &report) }
        }
    }

    /// Waits for the oldest batch's answer and applies it, with the later batches already
    /// answered in full.
    private func answerNext(_ pass: inout SendPass, scope: StoreScope, report: inout SyncSendResult) throws {
        let sent = pass.inFlight.removeFirst()
        let verdict = finish(sent.waiter, "records.modify", sent.params)
        CrashPoint.reached("mirror.afterServerReply")
        // Later batches whose every record was saved are applied with it, in one turn of the
        // store lock: each turn may wait for a client's whole save.
        var batch = sent.batch
        var verdicts = sent.waiter.decoded(as: ModifyVerdicts.self)
        if case .success = verdict, verdicts != nil {
            while let next = pass.inFlight.first, next.waiter.succeeded, let read = next.waiter.decoded(as: ModifyVerdicts.self) {
                pass.inFlight.removeFirst()
                _ = finish(next.waiter, "records.modify", next.params)
                CrashPoint.reached("mirror.afterServerReply")
                batch.items += next.batch.items
                batch.createsInFlight += next.batch.createsInFlight
                verdicts?.merge(read)
            }
        }
        switch try apply(verdict, read: verdicts, of: batch, scope: scope, report: &report, pass: &pass) {
        case .next:
            // When nothing was left to build, look again: saves made during the send are sent by it too.
            if pass.upcoming.isEmpty, pass.stopError == nil, !pass.rebuild { try buildMore(&pass, scope: scope, report: &report) }
        case .rebuild:
            pass.rebuild = true
            try forgetCreates(of: pass.upcoming)
            pass.upcoming = []
        case let .stop(error):
            // The batches already sent are still answered and applied; nothing more is sent.
            pass.stopError = pass.stopError ?? error
            try forgetCreates(of: pass.upcoming)
            pass.upcoming = []
        }
        if pass.rebuild, pass.inFlight.isEmpty {
            pass.rebuild = false
            if pass.stopError == nil { try readQueueAgain(&pass, scope: scope, report: &report) }
        }
    }

    /// History the send did not get to (it stopped, or saves came meanwhile) is queued:
    /// `pending` counts it, and status and the next send see it.
    private func countLeftOver(scope: StoreScope, stopped: Bool, report: inout SyncSendResult) throws {
        try stores.withStore(scope) { store in
            try ingest(store)
            if stopped { return }
            let state = store.bookkeeping
            report.pending += try state.pendingCount()
            let now = clock.seconds()
            if let next = try state.earliestDeferral(now: now) {
                report.retryAfterSeconds = min(report.retryAfterSeconds ?? .infinity, next - now)
                report.deferred += try state.allPending().filter { $0.notBefore > now }.count
            }
        }
    }

    /// Applies one batch's answer. `read`: its success reply as read from the bytes, if it was.
    private func apply(_ verdict: Result<JSONValue, WireError>, read: ModifyVerdicts?, of batch: Batch, scope: StoreScope,
                       report: inout SyncSendResult, pass: inout SendPass) throws -> Step {
        let items = batch.items
        defer { if let observer = sendObserver.withLock({ $0 }) { observer(report.saved) } }
        switch verdict {
        case let .success(result):
            // Every entry saved: only the mirror's metadata changes. (Read from the reply's bytes
            // when it came in the service's form, by `ModifyVerdicts`'s reader.)
            let verdicts = read ?? ModifyVerdicts(saved: result["saved"], deleted: result["deleted"])
            try applyVerdicts(items: items, scopeStore: batch.storeName, verdicts: verdicts, errors: [:],
                              answered: batch.createsInFlight, report: &report, pass: &pass)
            // A record saved where it was still moves: its entry is read again.
            return items.contains(where: \.touch) ? .rebuild : .next
        case let .failure(error) where error.code == .partialFailure:
            let errors = (error.details["partialErrors"]?.objectValue ?? [:]).compactMapValues { try? $0.decode(WireError.self) }
            try applyVerdicts(items: items, scopeStore: batch.storeName, verdicts: ModifyVerdicts(saved: error.details["saved"], deleted: error.details["deleted"]),
                              errors: errors, answered: batch.createsInFlight, report: &report, pass: &pass)
            return .rebuild
        case let .failure(error) where error.retry == .afterHalvingBatch:
            let halved = progress.withLock { $0.batchSizing.exceeded(items: items.count) }
            logger.info("limitExceeded: splitting the batch", ["items": .int(items.count), "nextBatch": .int(halved)])
            return items.count == 1 ? .stop(error) : .rebuild
        case let .failure(error) where error.retry == .afterRetryAfter:
            let retryAfter = error.details["retryAfterSeconds"]?.doubleValue
                ?? progress.withLock { state -> Double in state.backoffSeconds = min(60, max(1, state.backoffSeconds * 2)); return state.backoffSeconds }
            try stores.withStore(scope) { store in
                try store.write(commit: .deferred) { try store.bookkeeping.deferEntries(items.map(\.pending.uuid), until: clock.seconds() + retryAfter) }
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
    private func settleMissing(_ items: [SendItem], scope: StoreScope) throws {
        var fetched = SyncFetchResult()
        try fetchDatabase(scope, report: &fetched)
        try stores.withStore(scope) { store in try mapping.settleMissing(items, in: store) }
    }

    /// Creates the private database zones a batch needs (once per process and zone; again after zoneNotFound).
    func ensureZones(_ zones: Set<ZoneID>) throws {
        let missing = progress.withLock { state in zones.filter { !state.zonesEnsured.contains($0.key) } }
        guard !missing.isEmpty else { return }
        _ = try request("zones.save", ZonesParams(database: .private, zoneIDs: Array(missing)))
        progress.withLock { state in for zone in missing { state.zonesEnsured.insert(zone.key) } }
    }
}
