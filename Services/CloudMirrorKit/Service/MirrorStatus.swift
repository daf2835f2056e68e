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

extension CloudMirror {
    /// `body`, answered only after every notice it gave rise to went out: an explicit sync's
    /// reply comes after its imports' remote-change events (which a fetched page's commit
    /// sends once the log is synced: `OrderedAnnouncer`), as before pages stopped waiting.
    func announced<T>(_ body: () throws -> T) throws -> T {
        defer { engine.announcer.drain() }
        return try body()
    }

    func status(unsent listUnsent: Bool = false) throws -> SyncStatus {
        let progress = progress.withLock { $0 }
        let now = clock.seconds()
        let stores: [SyncStatus.Store] = try withStores { stores in
            try stores.list.map { store in
                // Queue what was saved since the last sync step, so the counts are current.
                try ingest(store)
                let state = MirrorBookkeeping(store)
                let cursor = Int(try state.value(MirrorBookkeeping.exportCursorKey) ?? "0") ?? 0
                var byZone: [String: Int] = [:]
                var deferred = 0
                let pending = try state.allPending()
                for entry in pending {
                    if entry.notBefore > now { deferred += 1 }
                    let zone: ZoneID?
                    if entry.kind == .delete {
                        zone = entry.zone
                    } else {
                        zone = try store.model.entity(named: entry.entity).flatMap { try self.zone(for: entry.uuid, entity: $0, state: state) }
                    }
                    byZone[zone?.key ?? "none", default: 0] += 1
                }
                var tokens: [String: String] = [:]
                for row in try store.database.query("SELECT key, value FROM mirror_kv WHERE key LIKE 'zoneToken:%'") {
                    tokens[String((row[0].string ?? "").dropFirst("zoneToken:".count))] = row[1].string
                }
                let unqueued = try store.database.scalar("SELECT count(*) FROM z_transaction WHERE token > ? AND author != ?",
                                                         [cursor, SaveOperation.syncAuthor])?.int ?? 0
                return .init(store: store.name, database: Self.database(of: store), pending: pending.count, pendingByZone: byZone,
                             deferred: deferred, exportCursor: cursor, historyToken: Int(store.lastToken), unqueuedTransactions: unqueued,
                             databaseToken: try state.value(MirrorBookkeeping.databaseTokenKey), zoneTokens: tokens,
                             unexportable: try state.unexportable(), refusedExports: refusedExports(store: store.name),
                             unimportable: try state.unimportable(),
                             deletesRemembered: try state.rememberedDeletes,
                             tombstonesHeld: try state.heldTombstoneCount,
                             pendingLinks: try PendingLinks(database: store.database).all().map {
                                 .init(recordName: $0.recordName, entity: $0.entity, relationship: $0.relationship, target: $0.target, zone: $0.zone,
                                       waitingSeconds: max(0, (now - $0.since).rounded()))
                             },
                             unsent: listUnsent ? try state.unsent(limit: 100) : nil)
            }
        }
        let quiescent = progress.inFlight == nil && stores.allSatisfy { $0.pending == 0 && $0.unqueuedTransactions == 0 && $0.tombstonesHeld == 0 }
        return SyncStatus(user: user, signedIn: isSignedIn, device: options.deviceName, environment: options.environment, mode: options.mode, conflictPolicy: options.conflictPolicy, stores: stores,
                            inFlight: progress.inFlight, lastError: progress.lastError,
                            lastSuccess: progress.lastSuccess.map { MirrorRecordCoding.isoFormat.format($0) },
                            batchLimit: progress.batchSizing.limit, quiescent: quiescent)
    }
}
