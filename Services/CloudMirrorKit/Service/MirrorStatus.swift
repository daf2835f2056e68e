import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire
import Synchronization

extension ErrorCode {
    /// A sync.* or share.* op on a store-service started without --sync-socket.
    public static let mirrorNotConfigured: ErrorCode = "mirrorNotConfigured"
}

extension MirrorEngine {
    /// `body`, answered only after every notice it gave rise to went out: an explicit sync's
    /// reply comes after its imports' remote-change events (which a fetched page's commit
    /// sends once the log is synced: `OrderedAnnouncer`), as before pages stopped waiting.
    func announced<T>(_ body: () throws -> T) throws -> T {
        defer { stores.drainNotices() }
        return try body()
    }

    func status(unsent listUnsent: Bool = false) throws -> SyncStatus {
        let progress = progress.withLock { $0 }
        let now = clock.seconds()
        let listed: [SyncStatus.Store] = try stores.withEveryStore { list in
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
        return SyncStatus(user: user, signedIn: isSignedIn, device: options.deviceName, environment: options.environment, mode: options.mode, conflictPolicy: options.conflictPolicy, stores: listed,
                          inFlight: progress.inFlight, lastError: progress.lastError,
                          lastSuccess: progress.lastSuccess.map { MirrorRecordCoding.isoFormat.format($0) },
                          batchLimit: progress.batchSizing.limit, quiescent: quiescent)
    }
}
