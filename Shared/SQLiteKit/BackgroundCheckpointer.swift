import CSQLite
import Foundation

/// Folds a WAL database's log into its main file from a thread (and connection) of its own.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that pushes the log past 1,000 pages, so
/// the request that happens to commit then pays for copying every page written since (in a
/// mirror send, about a sixth of the device's time and of the sync-service's). Here the writer's
/// WAL hook only signals this thread, which runs a PASSIVE checkpoint: it never blocks the
/// writer or readers, and a checkpoint is safe at any moment (a crash mid-way leaves the log
/// as the source of truth, as SQLite's own checkpoints do).
final class BackgroundCheckpointer: Sendable {
    /// Log size that starts a checkpoint: SQLite's own default (1,000 pages of 4 KiB).
    static let thresholdBytes = 4 << 20
    /// Log size (32 MiB) at which the writer checkpoints in its own commit instead. At
    /// 16 MiB a fetch of 10,000 records still spent a fourteenth of its applying thread here
    /// while the other core had room for the background thread.
    static let writerCheckpointBytes = 32 << 20

    /// The two sizes in this database's pages (the WAL hook counts pages).
    let thresholdPages: Int32
    let writerCheckpointPages: Int32

    /// The writer's commit counts, kept by the same hook.
    let ledger: CommitLedger
    private let thread = WorkerThread(name: "sqlite-checkpoint")
    private let connection: CheckpointConnection

    init(path: String, pageSize: Int, ledger: CommitLedger) {
        self.ledger = ledger
        connection = CheckpointConnection(path: path)
        thresholdPages = Int32(Self.thresholdBytes / max(pageSize, 512))
        writerCheckpointPages = Int32(Self.writerCheckpointBytes / max(pageSize, 512))
    }

    /// Called from the writer's WAL hook after each commit with the log's size in pages. Commits
    /// that come while a checkpoint runs are folded into one more after it.
    func logGrew(to pages: Int32) {
        guard pages >= thresholdPages else { return }
        _ = thread.handUnlessWaiting { [connection] in connection.checkpoint() }
    }

    /// Closes the checkpoint's connection after any checkpoint under way; no more are run.
    func stop() {
        thread.hand { [connection] in connection.close() }
        thread.stop()
    }
}

/// The checkpointer's own connection, opened by its first checkpoint: only the checkpoint
/// thread uses it.
private final class CheckpointConnection: @unchecked Sendable {
    private let path: String
    private var handle: OpaquePointer?
    private var failed = false

    init(path: String) { self.path = path }

    func checkpoint() {
        if handle == nil && !failed {
            var opened: OpaquePointer?
            guard sqlite3_open_v2(path, &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let opened else {
                sqlite3_close_v2(opened)
                failed = true
                return
            }
            handle = opened
        }
        guard let handle else { return }
        // PASSIVE: copies what no reader still needs, without waiting for any lock.
        sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }

    func close() {
        sqlite3_close_v2(handle)
        handle = nil
        failed = true
    }
}

extension Database {
    /// Moves this (file, WAL) database's checkpoints off the committing thread: SQLite's
    /// automatic checkpoint is turned off for this connection and a background thread checkpoints
    /// instead whenever a commit leaves the log at 4 MiB or more. Call once, on the writer.
    public func checkpointInBackground() {
        guard path != ":memory:", checkpointer == nil else { return }
        let pageSize = (try? scalar("PRAGMA page_size"))?.int ?? 4096
        let checkpointer = BackgroundCheckpointer(path: path, pageSize: pageSize, ledger: ledger)
        self.checkpointer = checkpointer
        // Replaces the automatic checkpoint's own hook (sqlite3_wal_autocheckpoint installs one).
        sqlite3_wal_hook(handle, { context, db, _, pages in
            guard let context else { return SQLITE_OK }
            let checkpointer = Unmanaged<BackgroundCheckpointer>.fromOpaque(context).takeUnretainedValue()
            checkpointer.ledger.count()
            if pages >= checkpointer.writerCheckpointPages {
                // The background thread has fallen behind a stream of commits (a checkpoint
                // cannot finish while new frames keep coming, and the log is only restarted
                // after one has): the writer checkpoints itself, as SQLite's own hook would, so
                // the log stays bounded and its pages are reused rather than the file grown.
                sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            } else {
                checkpointer.logGrew(to: pages)
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(checkpointer).toOpaque())
    }
}
