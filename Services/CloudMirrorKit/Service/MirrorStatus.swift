import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import Synchronization

extension ErrorCode {
    /// A sync.* or share.* op on a store-service started without --sync-socket.
    public static let mirrorNotConfigured: ErrorCode = "mirrorNotConfigured"
}

/// `account.signIn`.
struct SignInParams: Codable, Sendable {
    /// The cloud user's credential; absent: the one the service started with.
    var credential: String?
}

/// `sync.status`'s parameters.
struct MirrorStatusParams: Codable, Sendable {
    /// Also list `unsent` per store (reads every row: doctor asks, a settle loop does not).
    var unsent: Bool?
}

/// `sync.status`.
struct MirrorStatus: Codable, Sendable {
    struct StoreStatus: Codable, Sendable {
        var store: String
        var database: DatabaseScope
        var pending: Int
        var pendingByZone: [String: Int]
        var deferred: Int
        /// The last history token moved into the queue, and the store's newest token.
        var exportCursor: Int
        var historyToken: Int
        /// Local transactions (not the mirror's imports) after the cursor, not yet queued.
        var unqueuedTransactions: Int
        var databaseToken: String?
        var zoneTokens: [String: String]
        /// Shared-store objects outside any share zone: never exported.
        var unexportable: [String]
        /// Records the server refused at their last send (a production schema without their
        /// field or record type, a field of another type), with its error; they stay queued.
        var refusedExports: [RefusedExport]
        /// Cloud records the store refused (a value it cannot hold, written by another client):
        /// left out of the import, kept as they were here, tried again when they change.
        var unimportable: [MirrorBookkeeping.Unimportable]
        /// Records this device deleted, remembered until a whole fetch after the delete (a move
        /// by another device that beat the delete is then seen, and the delete follows it).
        var deletesRemembered: Int
        /// A fetch's deletions held for its end: none once a fetch has ended on a round that found
        /// no changes (one whose rounds ran out while zones still changed leaves them to the next).
        var tombstonesHeld: Int
        /// Relationships of imported objects whose destination record has not arrived yet
        /// (`PendingLinks`), each with how long it has waited.
        var pendingLinks: [PendingLinkStatus]
        /// With `unsent: true`: objects and links neither in the cloud nor queued (at most 100,
        /// objectIDs); none unless something is wrong (`StoreBookkeeping.unsent`).
        var unsent: [String]?
    }
    struct PendingLinkStatus: Codable, Sendable {
        var recordName: String
        var entity: String
        var relationship: String
        var target: String
        var zone: String?
        var waitingSeconds: Double
    }
    var user: String?
    /// False after account.signOut, until account.signIn.
    var signedIn: Bool
    var device: String
    /// The cloud environment the mirror syncs with.
    var environment: CloudEnvironment
    var mode: MirrorSyncMode
    var conflictPolicy: MirrorConflictPolicy
    var stores: [StoreStatus]
    var inFlight: String?
    var lastError: WireError?
    /// When the last sync step finished without an error (ISO 8601).
    var lastSuccess: String?
    var batchLimit: Int
    var quiescent: Bool
}

extension MirrorEngine {
    /// `body`, answered only after every notice it gave rise to went out: an explicit sync's
    /// reply comes after its imports' remote-change events (which a fetched page's commit
    /// sends once the log is synced: `OrderedAnnouncer`), as before pages stopped waiting.
    func announced<T>(_ body: () throws -> T) throws -> T {
        defer { stores.drainNotices() }
        return try body()
    }

    func status(unsent listUnsent: Bool = false) throws -> MirrorStatus {
        let progress = progress.withLock { $0 }
        let now = clock.seconds()
        let listed: [MirrorStatus.StoreStatus] = try stores.withEveryStore { list in
            try list.map { store in
                // Queue what was saved since the last sync step, so the counts are current.
                try ingest(store)
                let state = store.bookkeeping
                let cursor = Int(try state.value(MirrorBookkeeping.exportCursorKey) ?? "0") ?? 0
                let pending = try state.allPending()
                let deferred = pending.filter { $0.notBefore > now }.count
                let details = try mapping.statusDetails(of: store, pending: pending, exportCursor: cursor, now: now, listUnsent: listUnsent)
                return .init(store: store.name, database: store.database, pending: pending.count, pendingByZone: details.pendingByZone,
                             deferred: deferred, exportCursor: cursor, historyToken: Int(store.lastToken),
                             unqueuedTransactions: details.unqueuedTransactions,
                             databaseToken: try state.value(MirrorBookkeeping.databaseTokenKey), zoneTokens: try state.zoneTokens(),
                             unexportable: try state.unexportable(), refusedExports: refusedExports(store: store.name),
                             unimportable: try state.unimportable(),
                             deletesRemembered: try state.rememberedDeletes,
                             tombstonesHeld: try state.heldTombstoneCount,
                             pendingLinks: details.pendingLinks,
                             unsent: details.unsent)
            }
        }
        let quiescent = progress.inFlight == nil && listed.allSatisfy { $0.pending == 0 && $0.unqueuedTransactions == 0 && $0.tombstonesHeld == 0 }
        return MirrorStatus(user: user, signedIn: isSignedIn, device: options.deviceName, environment: options.environment, mode: options.mode, conflictPolicy: options.conflictPolicy, stores: listed,
                            inFlight: progress.inFlight, lastError: progress.lastError,
                            lastSuccess: progress.lastSuccess.map { MirrorRecordCoding.isoFormat.format($0) },
                            batchLimit: progress.batchSizing.limit, quiescent: quiescent)
    }
}
