import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire
import Synchronization

/// The mirror's engine (NSPersistentCloudKitContainer's sync half): the private store ↔ the
/// user's private database, the shared store ↔ the user's shared database, over one
/// connection to the sync-service. It reaches the stores through `stores` and asks `mapping`
/// what records mean (docs/ARCHITECTURE.md). Every sync step runs under `work`, one at a
/// time, on the calling connection's thread or the automatic-mode thread (blocking calls,
/// never on Swift's cooperative pool); `status` is readable at any moment.
final class MirrorEngine: Sendable {
    let options: MirrorOptions
    /// The stores it mirrors, each in a turn of the store lock.
    let stores: any MirrorStores
    /// What records mean: the engine asks it to build batches and to apply pages and verdicts.
    let mapping: any MirrorMapping
    var clock: DeviceClock { stores.clock }
    let logger = Logger(label: "store-service.mirror")
    // The live connection and the credential are read and replaced by the connection and
    // account extensions (MirrorEngine+Connection.swift, MirrorEngine+Account.swift).
    let connection = Mutex<Connection?>(nil)
    /// The credential the mirror signs in with; nil while the device is signed out.
    let credential: Mutex<String?>
    private let work = Mutex(())
    let progress: Mutex<Progress>
    /// Told the records saved so far after each batch a send applies, while a request that
    /// reports progress (share.create) runs a send.
    let sendObserver = Mutex<(@Sendable (Int) -> Void)?>(nil)
    private let wake = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    /// Set by a `databaseChanged` push: the automatic loop fetches at once.
    private let poked = Atomic<Bool>(false)
    /// Each store's name and identifier, for `cloudKitEvents`.
    var storeIdentities: [StoreIdentity] { stores.identities }

    struct Connection: Sendable {
        var client: WireClient
        var user: String
    }

    /// What `sync.status` shows besides the stores' queues.
    struct Progress: Sendable {
        var inFlight: String?
        var lastError: WireError?
        var lastSuccess: Date?
        var batchSizing: BatchSizing
        var zonesEnsured: Set<String> = []
        var backoffSeconds = 0.0
        /// A move waits for another device's (`applyVerdicts`): automatic mode fetches before it sends again.
        var fetchBeforeSend = false
        /// Records the server refused at their last send (by record name), until one saves.
        var refusedExports: [String: RefusedExport] = [:]
    }

    init(options: MirrorOptions, stores: any MirrorStores, mapping: any MirrorMapping) throws {
        self.options = options
        self.stores = stores
        self.mapping = mapping
        // A device whose stores are new has no bookkeeping yet: its tables wait for the mirror's
        // first turn (a sync step, status, a snapshot), which a device that never syncs skips.
        let tablesMade = try stores.makeTablesUnlessNew()
        // A sign-out outlives restarts (iOS stays signed out until the user signs in again).
        let signedOut = try tablesMade && stores.withStore(.private) { store in try store.bookkeeping.value(Self.signedOutKey) != nil } ?? false
        credential = Mutex(signedOut ? nil : options.credential)
        progress = Mutex(Progress(batchSizing: BatchSizing(start: options.batchSize)))
    }

    // MARK: Serialised work

    /// Runs `body` while no sync step runs (a snapshot's import or export), without recording it
    /// as a step: its errors are its caller's, not the mirror's.
    func pausingSync<T>(_ body: () throws -> T) throws -> T {
        try work.withLock { _ in try body() }
    }

    /// Runs one sync step exclusively, recording it as in flight and its error as the last one.
    func exclusive<T>(_ name: String, _ body: () throws -> T) throws -> T {
        try work.withLock { _ in
            progress.withLock { $0.inFlight = name }
            defer { progress.withLock { $0.inFlight = nil } }
            do {
                let result = try body()
                progress.withLock { $0.lastSuccess = clock.date(); $0.backoffSeconds = 0 }
                return result
            } catch let error as ServiceError {
                throw failed(error.wire)
            } catch let error as WireError {
                throw failed(error)
            }
        }
    }

    /// Records a failed step as the last error and gives it to the client: without the texts
    /// the mirror's parse kept (errors reach clients and sync.status).
    private func failed(_ error: WireError) -> ServiceError {
        let details = error.details
        progress.withLock { $0.lastError = WireError(error.code, error.message, details: details) }
        return ServiceError(error.code, error.message, details: details)
    }

    // MARK: Stores

    /// `body` on the store of `scope` in one turn of the store lock; unknownStore when none is loaded.
    func store<T>(_ scope: StoreScope, _ body: (any MirrorStore) throws -> T) throws -> T {
        guard let result = try stores.withStore(scope, body) else {
            throw ServiceError(.unknownStore, "No \(scope.rawValue) store is loaded.")
        }
        return result
    }

    /// Queues the store's history not yet queued (`MirrorMapping.queueHistory`).
    func ingest(_ store: any MirrorStore) throws {
        try mapping.queueHistory(of: store, enough: nil)
    }

    // MARK: Automatic mode

    /// Starts the automatic-mode thread: it syncs after local saves (seen as new history) and
    /// cloud pushes, and backs off after failures (honouring retry-after deferrals).
    func startAutomatic() {
        guard options.mode == .automatic else { return }
        let thread = Thread { [self] in automaticLoop() }
        thread.name = "cloud-mirror"
        thread.start()
    }

    func poke() {
        poked.store(true, ordering: .relaxed)
        wakeLoop()
    }

    /// A local save committed: automatic mode wakes (its loop sees the new history token).
    func localSaveCommitted() {
        if options.mode == .automatic { wakeLoop() }
    }

    private func wakeLoop() { wake.signal() }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        poke()
        connection.withLock { $0?.client.close(); $0 = nil }
    }

    /// Every 0.2 s the loop looks at the stores' newest history tokens: a local save (a new
    /// token) starts a send at once, a cloud push a send and a fetch; otherwise it sends and
    /// fetches every 5 s (pushes can be lost). A pass a local save started does not fetch: the
    /// cloud pushes other devices' changes (and, as CloudKit, not a device's own), so fetching
    /// then would only bring this device's own records back. After a failure it waits out the
    /// backoff (1 s doubling to 60 s) first, and still owes the fetch it was to make.
    private func automaticLoop() {
        var seenTokens: [Int64] = []
        var lastFetch = Date.distantPast
        var notBefore = Date.distantPast
        var fetchOwed = true
        while !stopping.load(ordering: .relaxed) {
            let tokens = stores.lastTokens()
            if poked.exchange(false, ordering: .relaxed) || Date().timeIntervalSince(lastFetch) >= 5 { fetchOwed = true }
            let due = fetchOwed || tokens != seenTokens
            if due && clock.date() >= notBefore && isSignedIn {
                do {
                    try exclusive("automatic") {
                        if progress.withLock({ state in defer { state.fetchBeforeSend = false }; return state.fetchBeforeSend }) {
                            lastFetch = Date()
                            _ = try fetchAll()
                        }
                        _ = try sendAll()
                        if fetchOwed {
                            lastFetch = Date()
                            _ = try fetchAll()
                            fetchOwed = false
                        }
                    }
                    notBefore = .distantPast
                } catch {
                    let backoff = progress.withLock { state -> Double in
                        state.backoffSeconds = min(60, max(1, state.backoffSeconds * 2))
                        return state.backoffSeconds
                    }
                    notBefore = clock.date().addingTimeInterval(backoff)
                }
                // A save during the sync (or the sync's own imports) moves the tokens again and
                // starts one more pass, which finds nothing new when nothing happened.
                seenTokens = tokens
            }
            _ = wake.wait(until: Date().addingTimeInterval(0.2))
        }
    }
}
