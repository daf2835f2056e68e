import CloudWire
import StoreWire
import StoreServiceKit

/// What `sync.status` shows of a store that only the model tells.
extension CoreDataMapping {
    func statusDetails(of mirrored: any MirrorStore, pending: [MirrorBookkeeping.Pending], exportCursor: Int, now: Double,
                       listUnsent: Bool) throws -> StoreStatusDetails {
        let turn = try CoreDataStore.of(mirrored), state = turn.state, store = turn.store
        var byZone: [String: Int] = [:]
        for entry in pending {
            let zone: ZoneID?
            if entry.kind == .delete {
                zone = entry.zone
            } else {
                zone = try store.model.entity(named: entry.entity).flatMap { try Self.zone(for: entry.uuid, entity: $0, state: state) }
            }
            byZone[zone?.key ?? "none", default: 0] += 1
        }
        let unqueued = try store.database.scalar("SELECT count(*) FROM z_transaction WHERE token > ? AND author != ?",
                                                 [exportCursor, SaveOperation.syncAuthor])?.int ?? 0
        let links = try PendingLinks(database: store.database).all().map {
            SyncStatus.PendingLink(recordName: $0.recordName, entity: $0.entity, relationship: $0.relationship, target: $0.target,
                                           zone: $0.zone, waitingSeconds: max(0, (now - $0.since).rounded()))
        }
        return StoreStatusDetails(pendingByZone: byZone, unqueuedTransactions: unqueued, pendingLinks: links,
                                  unsent: listUnsent ? try state.unsent(limit: 100) : nil)
    }
}
