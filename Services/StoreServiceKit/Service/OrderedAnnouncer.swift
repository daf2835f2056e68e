#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ServiceRuntime
import Synchronization

/// Tells the device's clients of what happened in the order it was committed, each once its
/// commit is on disk.
///
/// A fetched page of records commits without waiting for the disk: the fsync was a fifth of the
/// importing thread's time (in automatic mode, the thread the whole pipeline ends on), and the
/// page, its token and its history all roll back together, so a power cut only means fetching
/// the page again. But its remote-change notice names a history token, which a power cut could
/// hand out again to another transaction: the notice goes out only after the store's log has
/// been synced (`afterSync`), on a thread of its own, while the importing thread goes on with
/// the next page. Every announcement made meanwhile (a client's save, a CloudKit event) waits
/// behind it (`now`), so clients still hear of history in token order.
///
/// A deferred announcement is registered under the store lock, right after its commit: a
/// client's save that commits after it then finds it waiting, and queues behind it.
package final class OrderedAnnouncer: Sendable {
    private let queue = DispatchQueue(label: "store-service.announcer")
    /// Announcements queued and not yet made.
    private let waiting = Mutex(0)
    private let syncs = Atomic<Int>(0)
    /// Logs synced before an announcement since start (`info.logSyncs`).
    var logSyncs: Int { syncs.load(ordering: .relaxed) }
    private let logger = Logger(label: "store-service.announcer")

    /// Announces now, unless something queued is still waiting for the disk: then after it.
    func now(_ announce: @escaping @Sendable () -> Void) {
        let queued = waiting.withLock { count -> Bool in
            guard count > 0 else { return false }
            count += 1
            return true
        }
        guard queued else { return announce() }
        queue.async { [self] in
            announce()
            waiting.withLock { $0 -= 1 }
        }
    }

    /// Syncs the log of the SQLite file at `path` (its `-wal`), then announces; in order with
    /// everything else. Call right after the commit, under the lock the commit was made in.
    func afterSync(path: String, _ announce: @escaping @Sendable () -> Void) {
        waiting.withLock { $0 += 1 }
        queue.async { [self] in
            Self.syncLog(of: path, logger: logger)
            syncs.add(1, ordering: .relaxed)
            announce()
            waiting.withLock { $0 -= 1 }
        }
    }

    /// Returns once every announcement queued before the call has been made.
    package func drain() {
        guard waiting.withLock({ $0 > 0 }) else { return }
        queue.sync {}
    }

    /// `fdatasync` of the WAL file: the same sync a `synchronous=FULL` commit makes (a file's
    /// data is synced through any descriptor of it). A log that is not there has nothing
    /// unsynced (it is created by the first commit and only removed when the last connection
    /// closes, after a checkpoint).
    private static func syncLog(of path: String, logger: Logger) {
        let descriptor = open(path + "-wal", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        if fdatasync(descriptor) != 0 {
            logger.error("could not sync the store's log before announcing an import",
                         ["path": .string(path + "-wal"), "errno": .string(String(cString: strerror(errno)))])
        }
    }
}
