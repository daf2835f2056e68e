import CSQLite

/// An SQLite failure: the result code (an open set, as SQLite's are), SQLite's message, and the
/// statement that failed.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    public var resultCode: Int32
    public var message: String
    public var sql: String?

    public init(resultCode: Int32, message: String, sql: String? = nil) {
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code (extended codes carry detail in the high bits).
    public var primaryCode: Int32 { resultCode & 0xFF }
    public var isConstraintViolation: Bool { primaryCode == SQLITE_CONSTRAINT }
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    public var description: String {
        "SQLite error \(resultCode): \(message)" + (sql.map { " (in: \($0))" } ?? "")
    }
}
