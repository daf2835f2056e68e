import CSQLite

/// One SQLite connection. Not thread-safe by design: give each database one owner (an actor or
/// a lock) that serialises its use, as Core Data and CloudKit serialise a store's writes.
///
/// Durability: WAL journal with `synchronous=FULL`, so a transaction is on disk when COMMIT
/// returns (NORMAL could lose the last commits on power loss, and we acknowledge writes).
///
/// ```swift
/// let db = try Database(path: "/data/app.sqlite")
/// try db.inTransaction {
///     try db.execute("INSERT INTO t(a) VALUES (?)", [1])
///     return .commit
/// }
/// ```
public final class Database {
    let handle: OpaquePointer
    public let path: String
    private var statementCache: [String: Statement] = [:]
    /// The statements last looked up, by where their SQL text lives (`cached`).
    private var recentStatements = [RecentStatement?](repeating: nil, count: 64)
    /// Set by `checkpointInBackground()`; stopped when the connection closes.
    var checkpointer: BackgroundCheckpointer?
    /// Whether a COMMIT waits for the disk (file databases, `synchronous=FULL`).
    private let syncsCommits: Bool
    /// A deferred transaction could not put FULL back (SQLite refuses inside a transaction):
    /// the next `beginImmediate` does, before anything else commits. (Kept in the ledger, whose
    /// WAL hook counts each commit by it.)
    private var syncRelaxed: Bool {
        get { ledger.relaxed }
        set { ledger.relaxed = newValue }
    }
    /// Commits that wrote to the log, by whether they waited for the disk (file databases with
    /// a background checkpointer: the WAL hook counts them).
    public let ledger = CommitLedger()

    /// SQLite's process-wide settings, made once before its first use (sqlite3_config refuses
    /// them later). No allocation statistics: nothing here reads them, and counting every
    /// allocation takes one process-wide mutex, so connections used on two threads at once (a
    /// service's stores opened side by side, a writer beside a reader) queued on it.
    private static let processSettings: Void = { _ = meow_sqlite3_config_memstatus(0) }()

    /// Opens (creating if needed) the database at `path`; `":memory:"` keeps it in memory only.
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        _ = Self.processSettings
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(resultCode: code, message: message, sql: nil)
        }
        self.handle = db
        self.path = path
        syncsCommits = path != ":memory:" && !readOnly
        sqlite3_busy_timeout(db, 5000)
        if !readOnly {
            // 16 KiB pages for a new database (SQLite keeps an existing file's size): rows here
            // are large (a record's fields, a synced record's server copy: ~0.7 KiB), and with
            // 4 KiB pages only five fit in one, so appends split pages and write a WAL frame
            // every few rows.
            try execute("PRAGMA page_size=\(Self.pageSize)")
        }
        if path != ":memory:" && !readOnly {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=FULL")
        }
        try execute("PRAGMA foreign_keys=ON")
        registerCaseFolding()
        registerRegexMatching()
    }

    /// The page size a new database gets.
    public static let pageSize = 16_384

    /// An in-memory database: nothing touches the disk.
    public static func inMemory() throws(SQLiteError) -> Database { try Database(path: ":memory:") }

    deinit {
        if checkpointer != nil { sqlite3_wal_hook(handle, nil, nil) }
        checkpointer?.stop()
        statementCache.removeAll()
        recentStatements = [RecentStatement?](repeating: nil, count: 64)
        sqlite3_close_v2(handle)
    }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }

    /// Runs one or more statements without parameters (schema, pragmas).
    public func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        guard code == SQLITE_OK else {
            let message = errorMessage.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(errorMessage)
            throw SQLiteError(resultCode: code, message: message, sql: sql)
        }
    }

    /// Runs one statement with parameters, using a cached prepared statement.
    public func execute(_ sql: String, _ values: [any SQLBindable]) throws(SQLiteError) {
        try cached(sql).run(values)
    }

    /// Runs a query with parameters and returns every row.
    public func query(_ sql: String, _ values: [any SQLBindable] = []) throws(SQLiteError) -> [Row] {
        try cached(sql).query(values)
    }

    /// The first column of the first row, or nil.
    public func scalar(_ sql: String, _ values: [any SQLBindable] = []) throws(SQLiteError) -> SQLValue? {
        try query(sql, values).first?.values.first
    }

    /// A new prepared statement (not cached).
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(database: self, sql: sql, persistent: false)
    }

    /// A prepared statement kept for reuse; statements are the hot path for repeated writes.
    ///
    /// Looked up first by the address of the SQL's text: a literal's text never moves, and a
    /// text built the same way again often lands where the last one was, so a hot statement is
    /// found with one comparison (which settles it: equal addresses of different texts miss)
    /// instead of hashing its whole SQL, which was most of a lookup's cost.
    public func cached(_ sql: String) throws(SQLiteError) -> Statement {
        let address = sql.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? 0
        let slot = Int(truncatingIfNeeded: (address >> 4) ^ UInt(sql.utf8.count)) & (recentStatements.count - 1)
        if address != 0, let recent = recentStatements[slot], recent.address == address, recent.sql == sql { return recent.statement }
        let statement: Statement
        if let known = statementCache[sql] {
            statement = known
        } else {
            statement = try Statement(database: self, sql: sql, persistent: true)
            statementCache[sql] = statement
        }
        if address != 0 { recentStatements[slot] = RecentStatement(address: address, sql: sql, statement: statement) }
        return statement
    }

    private struct RecentStatement {
        var address: UInt
        var sql: String
        var statement: Statement
    }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    public var changes: Int { Int(sqlite3_changes(handle)) }
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    public enum TransactionOutcome: Sendable { case commit, rollback }

    /// Runs `body` in one transaction (BEGIN IMMEDIATE: the write lock is taken up front, so
    /// a transaction never fails half-way on a lock upgrade). Rolls back and rethrows the
    /// first error; `.rollback` undoes without an error.
    public func inTransaction<T>(_ body: () throws -> (TransactionOutcome, T)) throws -> T {
        try run(relaxed: false, body)
    }

    private func run<T>(relaxed: Bool, _ body: () throws -> (TransactionOutcome, T)) throws -> T {
        if relaxed { try execute("BEGIN IMMEDIATE") } else { try beginImmediate() }
        do {
            let (outcome, value) = try body()
            switch outcome {
            case .commit: try execute("COMMIT")
            case .rollback: try execute("ROLLBACK")
            }
            return value
        } catch {
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// BEGIN IMMEDIATE (the write lock up front). Every write transaction but a deferred one
    /// starts here, so none commits with the relaxed sync a deferred transaction may have left
    /// behind when it could not put FULL back (SQLite refuses while a transaction is open).
    public func beginImmediate() throws(SQLiteError) {
        if syncRelaxed {
            try execute("PRAGMA synchronous=FULL")
            syncRelaxed = false
        }
        try execute("BEGIN IMMEDIATE")
    }

    /// The common case: commit when `body` returns, roll back if it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try inTransaction { (.commit, try body()) }
    }

    /// Runs `body` in one read transaction (a deferred BEGIN: no lock is taken until the first
    /// read, and then only a read snapshot). For a reading connection beside a writer: every
    /// statement of `body` sees the same committed state. `body` must not write.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        defer { if isInTransaction { try? execute("COMMIT") } }
        return try body()
    }

    /// How a transaction's COMMIT reaches the disk.
    public enum CommitSync: Sendable {
        /// COMMIT returns once the log is on disk (`synchronous=FULL`): for acknowledged writes.
        case full
        /// COMMIT returns once the log is written, without waiting for the disk
        /// (`synchronous=NORMAL` for this transaction): for state the caller can derive again
        /// (a sync engine's bookkeeping). A process crash loses nothing; a power loss can lose
        /// such commits made since the last synced one, never corrupts the file, and never
        /// loses a later `full` commit or what came before it (its sync covers the whole log).
        case deferred
    }

    /// `transaction`, committed as `commit` says.
    public func transaction<T>(commit: CommitSync, _ body: () throws -> T) throws -> T {
        guard commit == .deferred, syncsCommits else { return try transaction(body) }
        try execute("PRAGMA synchronous=NORMAL")
        syncRelaxed = true
        defer {
            if (try? execute("PRAGMA synchronous=FULL")) != nil { syncRelaxed = false }
        }
        return try run(relaxed: true) { (.commit, try body()) }
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    public func integrityCheck() throws(SQLiteError) -> String {
        try scalar("PRAGMA integrity_check")?.string ?? "no answer"
    }

    /// The SQLite library version, e.g. "3.40.1".
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}
