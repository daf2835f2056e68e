import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire
import Synchronization

extension MirrorEngine {
    /// Fetches the private then the shared database.
    func fetchAll() throws -> SyncFetchResult {
        try signedInCredential()
        var report = SyncFetchResult()
        // Connected first: a connection that cannot be made is the setup's failure, and the
        // imports begin only once there is a cloud to import from.
        _ = try client()
        for scope in [StoreScope.private, .shared] {
            try event(.import, scope: scope) { _ in try fetchDatabase(scope, report: &report) }
        }
        return report
    }

    private static let releaser = DispatchQueue(label: "cloud-mirror.release", qos: .utility)
    /// Pages of a zone fetched ahead of the one being applied (`PagesAhead`).
    static let pagesAhead = 2

    struct ZoneChanges: Sendable {
        var changed: [CloudRecord]
        var deleted: [(recordName: String, recordType: String)]
        var token: String
        var moreComing: Bool
        /// Per changed record, its row values as far as they need no store (`PagePreparer`).
        /// Worked out where the page is decoded: for pages fetched ahead, on the client's reader
        /// thread while the page before is applied.
        var prepared: [MirrorImport.Prepared?]

        /// A page of a reply that came as a tree, read by the page's reader; one it cannot read
        /// is the fetch's error (applying nothing, keeping the token it had).
        init(json: JSONValue, preparer: PagePreparer) throws(MessageReadError) {
            self.init(try FetchZoneChangesResult(tree: json), preparer: preparer)
        }

        /// Reads a page from the reply's bytes (`WireClient.ResultReader`,
        /// `FetchZoneChangesResult.read`), its records' fields read by the same scan: nil when
        /// it cannot, and the reply is parsed into a tree and given to `init(json:)`.
        init?(bytes: UnsafeBufferPointer<UInt8>, preparer: PagePreparer) {
            guard let (page, read) = try? FetchZoneChangesResult.read(bytes, fields: { bytes, start in
                StoredFields.endAndFields(bytes, from: start).map { (end: $0.end, read: $0.fields) }
            }) else { return nil }
            self.init(page, preparer: preparer, read: read)
        }

        /// `read`: per changed record, its fields as the page's scan read them (empty: none were).
        private init(_ page: FetchZoneChangesResult, preparer: PagePreparer, read: [[StoredFields.Field]?] = []) {
            (changed, prepared) = preparer.prepare(page, read: read)
            deleted = page.deleted.map { ($0.recordName, $0.recordType) }
            token = page.token.text
            moreComing = page.moreComing
        }
    }

    /// `body` on the bookkeeping of the store of `scope` (unknownStore when none is loaded).
    func state<T>(_ scope: StoreScope, _ body: (MirrorBookkeeping) throws -> T) throws -> T {
        try store(scope) { try body($0.bookkeeping) }
    }

    /// A page goes to the mapping in one turn of the store lock, between two ingests: a merge
    /// reads the queue (the saves before it must be queued), and the import's own history
    /// (author sync) is moved past, never exported.
    func applyPage(_ page: ZonePage, scope: StoreScope, report: inout SyncFetchResult) throws {
        let user = user
        try store(scope) { store in
            try ingest(store)
            try mapping.applyPage(page, to: store, user: user, report: &report)
            try ingest(store)
        }
    }

    /// A zone went away: the mapping removes its objects and records (between two ingests, as
    /// a page), and the zone is made again before anything is sent into it.
    func removeZone(_ zone: ZoneID, scope: StoreScope, purged: Bool, report: inout SyncFetchResult) throws {
        try store(scope) { store in
            try ingest(store)
            try mapping.removeZone(zone, from: store)
            try ingest(store)
        }
        progress.withLock { _ = $0.zonesEnsured.remove(zone.key) }
        report.zonesRemoved.append((purged ? "purged:" : "") + zone.key)
    }

    func fetchDatabase(_ scope: StoreScope, report: inout SyncFetchResult) throws {
        guard stores.identities.contains(where: { $0.scope == scope }) else { return }
        let database: DatabaseScope = scope == .private ? .private : .shared
        let fullFetch = try state(scope) { state in try state.value(MirrorBookkeeping.databaseTokenKey) } == nil
        var currentZones: Set<ZoneID> = []
        // Deletions are held until every changed zone is applied (`holdTombstones`). A move
        // is one request, so once a round has seen its old zone's tombstone, the next round
        // sees its new zone if this one did not: rounds repeat (a few at most) while the last
        // round found changes and a held tombstone may still delete an object (one whose
        // record already came from its new zone deletes nothing, and needs no other round).
        var settled = false
        for _ in 0..<3 {
            let changed = try fetchDatabaseChanges(scope, database: database, zones: &currentZones, report: &report)
            guard changed, try state(scope, { state in try state.holdsTombstonesThatMayDelete }) else { settled = true; break }
        }
        // Zones are read one after another, not as one snapshot: a round can read a move's new
        // zone just before the move and its old zone just after, and see only the deletion.
        // Applied after a round that still found changes, such a deletion removed a session
        // another device had just moved (and, by its cascade rule, its events, on every device:
        // the moves variant with share.create's root-first path, while the other device's
        // events were still moving). They stay held (kept in the store) until a fetch whose
        // last round found nothing new, which has seen every zone after the move.
        if settled {
            try applyHeldTombstones(scope, report: &report)
        } else {
            logger.info("deletions held for the next fetch: the zones were still changing", ["scope": .string(scope.rawValue)])
        }
        // A fetch from nil lists only the zones that exist now: a zone this device holds data of
        // that is not among them was deleted while the device had no token (first fetch, or an
        // expired token) and is removed like a reported deletion.
        if fullFetch {
            let known = try state(scope) { state in try state.knownZones() }
            for zone in known.subtracting(currentZones) { try removeZone(zone, scope: scope, purged: false, report: &report) }
        }
    }

    /// The held deletions (`holdTombstones`), applied zone by zone: a record that meanwhile
    /// arrived in another zone is not deleted (`applyPage`).
    private func applyHeldTombstones(_ scope: StoreScope, report: inout SyncFetchResult) throws {
        for (zone, deleted) in try state(scope, { state in try state.heldTombstones() }) {
            try applyPage(ZonePage(changed: [], prepared: [], deleted: deleted, zone: zone, token: nil, holdDeletes: false), scope: scope, report: &report)
            try store(scope) { store in try store.write(commit: .deferred) { try store.bookkeeping.dropTombstones(zone: zone) } }
        }
    }

    /// One pass over the database's changes from its token: whether any zone changed.
    private func fetchDatabaseChanges(_ scope: StoreScope, database: DatabaseScope, zones currentZones: inout Set<ZoneID>,
                                      report: inout SyncFetchResult) throws -> Bool {
        var changedAny = false
        while true {
            let token = try state(scope) { state in try state.value(MirrorBookkeeping.databaseTokenKey) }
            let reply: JSONValue
            switch attempt("changes.fetchDatabase", FetchDatabaseChangesParams(database: database, since: token.map { ChangeToken($0) })) {
            case let .success(value): reply = value
            case let .failure(error) where error.retry == .afterRefetch && token != nil:
                report.tokensExpired += 1
                try store(scope) { store in try store.write { try store.bookkeeping.setValue(MirrorBookkeeping.databaseTokenKey, nil) } }
                continue
            case let .failure(error): throw error
            }
            let changes = try FetchDatabaseChangesResult(tree: reply)
            for zone in changes.deletedZones { try removeZone(zone, scope: scope, purged: false, report: &report) }
            for zone in changes.purgedZones { try removeZone(zone, scope: scope, purged: true, report: &report) }
            for zone in changes.encryptedDataResetZones {
                try store(scope) { store in
                    try store.write { try mapping.requeueZone(zone, in: store) }
                }
                progress.withLock { _ = $0.zonesEnsured.remove(zone.key) }
                report.zonesReset.append(zone.key)
            }
            // Share zones before the core-data zone: sharing moves records out of the core-data
            // zone, and the move's creates are then known before its deletes arrive.
            let ordered = changes.changedZones.filter { $0.zoneName != ZoneID.coreDataZoneName }
                + changes.changedZones.filter { $0.zoneName == ZoneID.coreDataZoneName }
            for zone in ordered { try fetchZone(zone, scope: scope, database: database, report: &report) }
            currentZones.formUnion(changes.changedZones)
            changedAny = changedAny || !changes.changedZones.isEmpty
            // A database token can be derived again (one lost to a power cut only means the zones
            // it covered are listed again; each zone's token is kept with its pages): written
            // without waiting for the disk, and not at all when it is unchanged.
            try store(scope) { store in
                let state = store.bookkeeping
                guard try state.value(MirrorBookkeeping.databaseTokenKey) != changes.token.text else { return }
                try store.write(commit: .deferred) { try state.setValue(MirrorBookkeeping.databaseTokenKey, changes.token.text) }
            }
            if !changes.moreComing { break }
        }
        return changedAny
    }

    func fetchZone(_ zone: ZoneID, scope: StoreScope, database: DatabaseScope, report: inout SyncFetchResult) throws {
        // A fetch from nil lists live records only, no deletions: the records this device knows
        // in the zone that it does not list were deleted meanwhile (first fetch, expired token).
        var listed: Set<String>?
        let preparer = try store(scope) { store in try mapping.pagePreparer(for: store) }
        let ahead = pagesAhead(zone, database: database, preparer: preparer)
        defer { ahead.stop() }
        while true {
            let token = try state(scope) { state in try state.value(MirrorBookkeeping.zoneTokenKey(zone)) }
            // (A device that knows no record of the zone yet has nothing to compare.)
            if token == nil { listed = try state(scope) { state in try state.knowsRecords(inZone: zone) } ? [] : nil }
            let params = FetchZoneChangesParams(database: database, zoneID: zone, since: token.map { ChangeToken($0) }, limit: BatchSizing.fetchPage)
            let reply: JSONValue
            let prefetched = ahead.next()
            var outcome = prefetched?.wait()
            var decoded = prefetched?.decoded(as: ZoneChanges.self)
            // A page that came ahead and was decoded has asked for the one after it already.
            let askedNext = decoded != nil
            if case .failure = outcome { outcome = nil }
            if outcome == nil {
                let waiter = ReplyWaiter(read: { bytes in ZoneChanges(bytes: bytes, preparer: preparer) })
                begin("changes.fetchZone", params, into: waiter)
                outcome = finish(waiter, "changes.fetchZone", params)
                decoded = waiter.decoded(as: ZoneChanges.self)
            }
            switch outcome! {
            case let .success(value): reply = value
            case let .failure(error) where error.retry == .afterRefetch && token != nil:
                // docs/RULES.md (mirroring): an expired token refetches from nil; applying is idempotent, so nothing doubles.
                report.tokensExpired += 1
                try store(scope) { store in try store.write { try store.bookkeeping.setValue(MirrorBookkeeping.zoneTokenKey(zone), nil) } }
                continue
            case let .failure(error) where error.code == .zoneNotFound:
                try removeZone(zone, scope: scope, purged: false, report: &report)
                return
            case let .failure(error): throw error
            }
            // The next pages travel, are parsed and decoded (on the client's reader thread) while
            // this one is applied; each is used only after the page before has been applied with
            // its token, so the order of pages and tokens is unchanged. A page that came ahead
            // was decoded when it arrived, and has already asked for the one after it.
            if !askedNext, let next = decoded.map({ $0.moreComing ? $0.token : nil }) ?? FetchZoneChangesResult.nextToken(reply)?.text { ahead.ask(after: next) }
            let page = try decoded ?? ZoneChanges(json: reply, preparer: preparer)
            report.pages += 1
            // The page's token is saved in the transaction that applies the page (the last one,
            // when the page needs a context save too): a token is never kept without its page.
            // Applying is idempotent anyway: a page fetched again changes nothing.
            try applyPage(ZonePage(changed: page.changed, prepared: page.prepared, deleted: page.deleted, zone: zone, token: page.token,
                                   holdDeletes: true), scope: scope, report: &report)
            CrashPoint.reached("mirror.afterApplyingPage")
            listed?.formUnion(page.changed.map(\.recordName))
            let more = page.moreComing
            // A page's JSON tree is thousands of small allocations: it is freed on another
            // thread (this one, applying pages, is the fetch's bottleneck; freeing here was a
            // twentieth of its time).
            let spent = (consume reply, consume page)
            Self.releaser.async { withExtendedLifetime(spent) {} }
            if !more { break }
        }
        if let listed {
            if scope == .private, !listed.contains(CloudKitNames.zoneShareName) {
                // No share among the zone's live records: another device of the owner stopped it.
                try store(scope) { store in try store.write { try store.bookkeeping.dropShare(zone: zone.zoneName) } }
            }
            let gone = try state(scope) { state in try state.recordNames(inZone: zone).filter { !listed.contains($0.uuid) } }
            if !gone.isEmpty {
                try applyPage(ZonePage(changed: [], prepared: [], deleted: gone.map { ($0.uuid, CloudKitNames.coreDataName($0.entity)) }, zone: zone,
                                       token: nil, holdDeletes: true), scope: scope, report: &report)
            }
        }
    }

    /// The next page is asked for as soon as this one's token is known, before its records
    /// are decoded: pages chain through tokens, so the cloud builds the next one meanwhile.
    /// Pages are read from the reply's bytes (`ZoneChanges(bytes:)`), or failing that from
    /// its tree; either way the next page is asked for first.
    private func pagesAhead(_ zone: ZoneID, database: DatabaseScope, preparer: PagePreparer) -> PagesAhead {
        let ahead = PagesAhead(depth: Self.pagesAhead)
        ahead.setUp(decode: { [weak ahead] json in
            if let token = FetchZoneChangesResult.nextToken(json) { ahead?.ask(after: token.text) }
            // A page that does not read stays undecoded: the fetch reads it again when its turn
            // comes, and reports the error then.
            do { return try ZoneChanges(json: json, preparer: preparer) } catch { return error }
        }, read: { [weak ahead] bytes in
            guard let page = ZoneChanges(bytes: bytes, preparer: preparer) else { return nil }
            if page.moreComing { ahead?.ask(after: page.token) }
            return page
        }, send: { [self] token, waiter in
            begin("changes.fetchZone", FetchZoneChangesParams(database: database, zoneID: zone, since: ChangeToken(token), limit: BatchSizing.fetchPage), into: waiter, connecting: false)
        })
        return ahead
    }
}
