import Foundation
import SQLiteKit
import Testing

/// A fresh directory for one test's files, removed by `remove()`.
struct TestDirectory {
    let path = NSTemporaryDirectory() + "sqlkit-\(UUID().uuidString)"
    init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    func file(_ name: String) -> String { path + "/" + name }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

@Suite("SQLiteKit")
struct DatabaseTests {
    /// `cached` looks a statement up by the address of its text first; texts built again and
    /// again land at reused addresses with other contents, and must still get their own statement.
    @Test("cached statements: each SQL text gets its own, also when built texts reuse addresses")
    func cachedStatementsMatchTheirText() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(k INTEGER)")
        for i in 0..<500 {
            let sql = "SELECT \(i % 7) + ? AS v" + String(repeating: " ", count: i % 3)
            let statement = try db.cached(sql)
            #expect(statement.sql == sql)
            #expect(try db.scalar(sql, [Int64(1)])?.int64 == Int64(i % 7 + 1))
        }
        let literal = try db.cached("SELECT 1")
        #expect(try db.cached("SELECT 1") === literal)
    }

    /// A statement run again binds every parameter afresh (reusing their buffers), and one run
    /// with fewer values than parameters leaves the rest NULL, not the last run's values.
    @Test("a cached statement run again stores each run's values; parameters given no value are NULL")
    func reboundParameters() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(k INTEGER, a TEXT, b TEXT)")
        let long = String(repeating: "é猫", count: 300)
        let rows: [(Int64, String, String?)] = [(1, long, "x"), (2, "short", long), (3, "", nil), (4, long + "!", "é")]
        for (key, a, b) in rows { try db.execute("INSERT INTO t(k, a, b) VALUES (?, ?, ?)", [key, a, b.map(SQLValue.text) ?? .null]) }
        try db.execute("INSERT INTO t(k, a, b) VALUES (?, ?, ?)", [Int64(5), "only a"])
        let stored = try db.query("SELECT k, a, b FROM t ORDER BY k")
        #expect(stored.map { $0[1].string } == rows.map(\.1) + ["only a"])
        #expect(stored.map { $0[2].string } == rows.map(\.2) + [nil], "a parameter left out is NULL, not the last run's value")
    }

    @Test("a transaction commits all of its statements")
    func commit() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER, b TEXT)")
        try db.transaction {
            try db.execute("INSERT INTO t VALUES (?, ?)", [1, "x"])
            try db.execute("INSERT INTO t VALUES (?, ?)", [2, nil as String?])
        }
        let rows = try db.query("SELECT a, b FROM t ORDER BY a")
        #expect(rows.map { $0["a"].int } == [1, 2])
        #expect(rows[1]["b"] == .null)
    }

    @Test("text keeps every character, U+0000 and what follows it included; an empty string is '' and not NULL")
    func textRoundTripsWhole() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT)")
        let texts = ["before\u{0}after", "\u{0}", "", "猫\u{0}🐈 é", String(repeating: "x\u{0}", count: 5_000), "short"]
        for (index, text) in texts.enumerated() { try db.execute("INSERT INTO t VALUES (?, ?)", [index, text]) }
        #expect(try db.query("SELECT b FROM t ORDER BY a").map { $0["b"].string } == texts)
        #expect(try db.scalar("SELECT length(CAST(b AS BLOB)) FROM t WHERE a = 0")?.int == 12, "all 12 bytes were stored")
        #expect(try db.scalar("SELECT b IS NOT NULL AND b = '' FROM t WHERE a = 2")?.int == 1)
        #expect(try db.scalar("SELECT a FROM t WHERE b = ?", ["before\u{0}after"])?.int == 0, "a bound parameter compares whole")
    }

    @Test("a throwing transaction leaves nothing behind and rethrows the first error")
    func rollbackOnError() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(a INTEGER PRIMARY KEY)")
        #expect(throws: SQLiteError.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES (?)", [1])
                try db.execute("INSERT INTO t VALUES (?)", [1])  // constraint violation
            }
        }
        #expect(try db.scalar("SELECT count(*) FROM t")?.int == 0)
        #expect(!db.isInTransaction)
    }

    @Test("a file database uses WAL and synchronous=FULL, and its data survives reopening")
    func durability() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        do {
            let db = try Database(path: dir.file("a.sqlite"))
            #expect(try db.scalar("PRAGMA journal_mode")?.string == "wal")
            #expect(try db.scalar("PRAGMA synchronous")?.int == 2)
            try db.execute("CREATE TABLE t(v BLOB)")
            try db.execute("INSERT INTO t VALUES (?)", [[UInt8]([1, 2, 3])])
        }
        let reopened = try Database(path: dir.file("a.sqlite"))
        #expect(try reopened.scalar("SELECT v FROM t")?.bytes == [1, 2, 3])
        #expect(try reopened.integrityCheck() == "ok")
    }

    @Test("a deferred transaction commits without waiting for the disk, and the next one waits again (also after a throw)")
    func deferredCommit() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        do {
            let db = try Database(path: dir.file("a.sqlite"))
            try db.execute("CREATE TABLE t(a INTEGER PRIMARY KEY)")
            let inside = try db.transaction(commit: .deferred) { () throws -> Int? in
                try db.execute("INSERT INTO t VALUES (?)", [1])
                return try db.scalar("PRAGMA synchronous")?.int
            }
            #expect(inside == 1, "NORMAL for the deferred transaction")
            #expect(try db.scalar("PRAGMA synchronous")?.int == 2, "FULL again after it")
            #expect(throws: SQLiteError.self) {
                try db.transaction(commit: .deferred) { try db.execute("INSERT INTO t VALUES (?)", [1]) }
            }
            #expect(try db.scalar("PRAGMA synchronous")?.int == 2, "FULL again after a rollback")
            let full = try db.transaction(commit: .full) { try db.scalar("PRAGMA synchronous")?.int }
            #expect(full == 2)
        }
        // Committed (the log is written before COMMIT returns): a new connection reads it.
        #expect(try Database(path: dir.file("a.sqlite")).scalar("SELECT count(*) FROM t")?.int == 1)
        // In memory there is no disk to wait for: the setting is left alone.
        let memory = try Database.inMemory()
        let setting = try memory.scalar("PRAGMA synchronous")?.int
        #expect(try memory.transaction(commit: .deferred) { try memory.scalar("PRAGMA synchronous")?.int } == setting)
    }

    @Test("errors carry the result code and the SQL")
    func errors() throws {
        let db = try Database.inMemory()
        do {
            try db.execute("SELECT * FROM missing", [])
            Issue.record("expected an error")
        } catch {
            #expect(error.sql == "SELECT * FROM missing")
            #expect(error.message.contains("no such table"))
        }
    }

    @Test("A new database file gets 16 KiB pages; an existing file keeps the size it was made with")
    func newFilesGetLargePages() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        do {
            let db = try Database(path: dir.file("new.sqlite"))
            try db.execute("CREATE TABLE t(a INTEGER)")
            #expect(try db.scalar("PRAGMA page_size")?.int == Database.pageSize)
            #expect(Database.pageSize == 16_384)
        }
        #expect(try Database(path: dir.file("new.sqlite")).scalar("PRAGMA page_size")?.int == 16_384)
        // A file written before (4 KiB pages) is opened as it is: SQLite cannot change a WAL
        // file's page size, and the pragma must not fail its opening.
        do {
            let old = try Database(path: dir.file("old.sqlite"))
            try old.execute("PRAGMA journal_mode=DELETE")
            try old.execute("PRAGMA page_size=4096")
            try old.execute("VACUUM")
            try old.execute("PRAGMA journal_mode=WAL")
            try old.execute("CREATE TABLE t(a INTEGER)")
            try old.execute("INSERT INTO t VALUES (1)")
            #expect(try old.scalar("PRAGMA page_size")?.int == 4096)
        }
        let reopened = try Database(path: dir.file("old.sqlite"))
        #expect(try reopened.scalar("PRAGMA page_size")?.int == 4096)
        #expect(try reopened.scalar("SELECT count(*) FROM t")?.int == 1)
    }

    @Test("A read transaction on a read-only connection sees one snapshot while the writer commits, and the next sees the commit")
    func readTransactionsAreSnapshots() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let writer = try Database(path: dir.file("db.sqlite"))
        try writer.execute("CREATE TABLE t(a INTEGER)")
        try writer.execute("INSERT INTO t VALUES (1)")
        let reader = try Database(path: dir.file("db.sqlite"), readOnly: true)
        let (before, during) = try reader.readTransaction { () throws -> (Int?, Int?) in
            let before = try reader.scalar("SELECT count(*) FROM t")?.int
            // The writer is not blocked by the open read transaction (WAL).
            try writer.transaction { try writer.execute("INSERT INTO t VALUES (2)") }
            return (before, try reader.scalar("SELECT count(*) FROM t")?.int)
        }
        #expect(before == 1 && during == 1)
        #expect(!reader.isInTransaction)
        #expect(try reader.readTransaction { try reader.scalar("SELECT count(*) FROM t")?.int } == 2)
        #expect(throws: SQLiteError.self) { try reader.execute("INSERT INTO t VALUES (3)") }
    }

    @Test("Background checkpoints: a stream of commits keeps the log bounded and loses nothing; the file holds it all after close")
    func backgroundCheckpointsKeepTheLogBounded() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = dir.file("bg.sqlite")
        var largestLog = 0
        do {
            let db = try Database(path: path)
            db.checkpointInBackground()
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            let body = String(repeating: "x", count: 3000)
            // 120 commits of ~750 KB each: ~90 MB written, the log passes the writer's own
            // checkpoint size (32 MiB) several times.
            for batch in 0..<120 {
                try db.transaction {
                    for row in 0..<250 { try db.execute("INSERT INTO t(id, body) VALUES (?, ?)", [batch * 250 + row, body]) }
                }
                let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
                largestLog = max(largestLog, size)
            }
            #expect(try db.scalar("SELECT count(*) FROM t")?.int == 30_000)
        }
        // 32 MiB plus one commit's worth, with frame headers: never the ~90 MB written.
        #expect(largestLog > 0 && largestLog < (32 << 20) + (3 << 20), "largest log \(largestLog) bytes")
        let reopened = try Database(path: path)
        #expect(try reopened.scalar("SELECT count(*) FROM t")?.int == 30_000)
        #expect(try reopened.integrityCheck() == "ok")
    }

    @Test("The commit ledger counts commits that wrote the log: durable ones, deferred ones, autocommits; not one that changed nothing")
    func commitLedgerCountsBySync() throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file("ledger.sqlite"))
        db.checkpointInBackground()
        try db.execute("CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT)")
        let start = db.ledger.counts
        try db.transaction { try db.execute("INSERT INTO kv VALUES ('a', '1')") }
        try db.transaction(commit: .deferred) { try db.execute("INSERT INTO kv VALUES ('b', '1')") }
        try db.execute("INSERT INTO kv VALUES ('c', '1')")
        // The same value again: SQLite leaves the page as it was, so nothing reaches the log.
        try db.transaction { try db.execute("UPDATE kv SET value = '1' WHERE key = 'a'") }
        let end = db.ledger.counts
        #expect(end.durable - start.durable == 2)
        #expect(end.relaxed - start.relaxed == 1)
    }

    @Test("The least text is SQLite's least (bytewise) where Swift's string order differs: a decomposed é sorts before f")
    func leastTextIsSQLitesOrder() throws {
        let texts = ["\u{E9}", "e\u{301}x", "f"]
        // Swift compares canonical forms: the decomposed "éx" is U+00E9 there, after "f".
        #expect(texts.min() == "f")
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(v TEXT)")
        for text in texts { try db.execute("INSERT INTO t VALUES (?)", [text]) }
        let least = try #require(try db.scalar("SELECT min(v) FROM t")?.string)
        #expect(SQLValue.leastText(texts) == least)
        #expect(least == "e\u{301}x")
        #expect(SQLValue.leastText([]) == nil)
    }

    @Test("The least text agrees with SQLite's min() on prefixes, shared prefixes and non-ASCII, in any order")
    func leastTextAgreesOnPrefixes() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(v TEXT)")
        let sets = [["abc", "ab", "abd"], ["0190-7A", "0190-7", "0190-79Z"], ["\u{E9}t\u{E9}", "\u{E9}", "z"], ["b", "", "a"],
                    ["\u{1F431}", "\u{FF}", "\u{7F}"]]
        for texts in sets {
            try db.execute("DELETE FROM t")
            for text in texts { try db.execute("INSERT INTO t VALUES (?)", [text]) }
            let least = try #require(try db.scalar("SELECT min(v) FROM t")?.string)
            #expect(SQLValue.leastText(texts) == least)
            #expect(SQLValue.leastText(texts.reversed()) == least)
        }
    }
}


/// What SQLite does with -0.0, which the store's double and float attributes rely on
/// (protocol-store-service.md, attribute values): a REAL column keeps 0.0, as Core Data's SQLite
/// store's REAL columns do; only a column without a type keeps the sign.
@Suite("SQLite and -0.0")
struct NegativeZeroTests {
    @Test("-0.0 bound into a REAL column reads back as 0.0 (typeof real); a column without a type keeps -0.0")
    func aRealColumnDropsTheSign() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t(r REAL, x)")
        try db.execute("INSERT INTO t(r, x) VALUES (?, ?)", [SQLValue.real(-0.0), SQLValue.real(-0.0)])
        let real = try #require(try db.scalar("SELECT r FROM t")?.double)
        let untyped = try #require(try db.scalar("SELECT x FROM t")?.double)
        #expect(real == 0 && real.sign == .plus)
        #expect(untyped == 0 && untyped.sign == .minus)
        #expect(try db.scalar("SELECT typeof(r) FROM t") == .text("real"))
    }
}
