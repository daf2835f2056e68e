import CloudWire
import SQLiteKit
import ServiceRuntime
import Synchronization

/// What a cloud's two environments share: one SQLite database (each environment's rows are
/// told apart by their zones' `environment`), its writer and readers, the zone locks, the
/// users, the clock, the limits and the change listener. Each `CloudEngine` is a view of it
/// in one environment, so a change spanning both (a snapshot import, a user's creation, a
/// schema deployment) is one transaction.
final class CloudCore: Sendable {
    /// Guards `cloud`: every use of the read-write connection happens inside this lock.
    let lock = SleepingLock()
    let cloud: CloudTransaction
    /// Read-only connections for fetches; empty for an in-memory database (reads use `cloud`).
    let readers: [Reader]
    let nextReader = Atomic<Int>(0)
    let currentLimits: Mutex<CloudLimits>
    let locks = WriteLocks()
    let accounts = Mutex([String: CloudEngine.Account]())
    let fixedClock = Mutex<Double?>(nil)
    /// Boxed: a closure kept directly in a Mutex came back wrapped in two more reabstraction
    /// thunks from every `withLock { $0 }` (the inout is converted out and back), so each
    /// commit deepened the call chain until, ~24,000 commits in, publishing overflowed the stack.
    let listener = Mutex<ChangeListener?>(nil)
    let notificationListener = Mutex<NotificationListener?>(nil)
    /// Writes a large modify's reply while its commit waits for the disk.
    let replyWriter = WorkerThread(name: "modify-reply")
    private let developmentSchema = SchemaBox()
    private let productionSchema = SchemaBox()

    /// One read-only connection and the lock that gives it to one request at a time.
    final class Reader: Sendable {
        let lock = SleepingLock()
        let state: CloudTransaction
        init(state: CloudTransaction) { self.state = state }
    }

    final class ChangeListener: Sendable {
        let body: @Sendable ([ChangeNotice]) -> Void
        init(_ body: @escaping @Sendable ([ChangeNotice]) -> Void) { self.body = body }
    }

    final class NotificationListener: Sendable {
        let body: @Sendable ([SubscriptionNotice]) -> Void
        init(_ body: @escaping @Sendable ([SubscriptionNotice]) -> Void) { self.body = body }
    }

    init(database: sending Database, limits: CloudLimits, readers: Int) throws {
        try CloudSchema.create(in: database)
        let seq = try database.scalar("SELECT value FROM meta WHERE key = 'seq'")?.int64 ?? 0
        let path = database.path
        cloud = CloudTransaction(db: database, seq: seq, limits: limits)
        currentLimits = Mutex(limits)
        self.readers = path == ":memory:" ? [] : try (0..<readers).map { _ in
            let reader = try Database(path: path, readOnly: true)
            // A reader's page cache is dropped whenever the writer commits; mapped pages are
            // read without a pread and a copy each.
            try reader.execute("PRAGMA mmap_size = 268435456")
            return Reader(state: CloudTransaction(db: reader, seq: 0, limits: limits))
        }
    }

    /// The field definitions of `environment`.
    func schema(_ environment: CloudEnvironment) -> SchemaBox {
        environment == .production ? productionSchema : developmentSchema
    }
}

/// One environment's committed field definitions, behind a lock.
final class SchemaBox: Sendable {
    private let value = Mutex(FieldSchema())

    func withLock<T: Sendable>(_ body: (inout FieldSchema) -> T) -> T {
        value.withLock { body(&$0) }
    }
}
