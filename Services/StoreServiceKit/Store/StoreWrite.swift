import ServiceRuntime
import SQLiteKit

/// The one way to write a store outside a context's save (the mirror's imports and bookkeeping,
/// share metadata, the orphan repair): `body` runs in one SQLite transaction on the store's
/// connection and records its changes through the `StoreChangeRecorder` it is handed; the
/// history row is written before the COMMIT and the remote-change notice made from the same
/// record, and the notice is published as soon as the write has committed. So rows never change
/// without their history, and history never commits without its notice.
/// (A context's save writes several stores in one commit, and records through the same
/// recorder in `SaveWriter`.)
extension StoreEngine {
    /// `commit: .deferred` commits without waiting for the disk (state that can be derived
    /// again, a fetched page): its notice then goes out once the log is synced
    /// (`publishOnceDurable`), so no client sees a history token a power cut could hand out
    /// again. `announcingExcept`: the connection that asked for the write, which is not told of
    /// it (a client is not told of its own change).
    /// A write that records nothing (bookkeeping tables, share metadata) has no history and no
    /// notice.
    package func write<T>(_ store: PersistentStore, author: String, contextName: String?, commit: Database.CommitSync = .full,
                          announcingExcept connection: ConnectionHandle? = nil,
                          _ body: (inout StoreChangeRecorder) throws -> T) throws -> T {
        let (value, notice) = try store.database.transaction(commit: commit) { () -> (T, RemoteChangeNotice?) in
            var changes = StoreChangeRecorder(store: store, author: author, contextName: contextName)
            let value = try body(&changes)
            return (value, try changes.finish())
        }
        guard let notice else { return value }
        switch commit {
        case .full: publish([notice], from: connection)
        case .deferred: publishOnceDurable([notice], store: store)
        }
        return value
    }
}
