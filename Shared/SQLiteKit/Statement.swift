import CSQLite

/// A prepared statement. Owns its handle (finalized on deinit). Bind, then step.
///
/// ```swift
/// let insert = try db.prepare("INSERT INTO t(a, b) VALUES (?, ?)")
/// try insert.run([1, "x"])
/// ```
public final class Statement {
    let handle: OpaquePointer
    public let sql: String
    private unowned let database: Database

    init(database: Database, sql: String, persistent: Bool) throws(SQLiteError) {
        var statement: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(database.handle, sql, -1, flags, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw SQLiteError(resultCode: code, message: database.lastMessage, sql: sql)
        }
        self.handle = statement
        self.sql = sql
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// The statement's `?` parameters.
    private lazy var parameterCount = sqlite3_bind_parameter_count(handle)

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Binds values to the `?` parameters in order (clearing earlier bindings).
    public func bind(_ values: [any SQLBindable]) throws(SQLiteError) {
        sqlite3_reset(handle)
        // Only parameters left unbound need clearing: clearing every one freed each text value's
        // buffer, so binding the next text allocated it again (an allocation per text value per
        // row, in every batch the mirror writes); a parameter bound again reuses its buffer.
        if values.count < Int(parameterCount) { sqlite3_clear_bindings(handle) }
        for (offset, value) in values.enumerated() { try bind(value.sqlValue, at: Int32(offset + 1)) }
    }

    /// Binds one value to the 1-based parameter `index` (for hot paths that bind a row's values
    /// straight from their storage, without building an array of existentials).
    public func bind(_ value: SQLValue, at index: Int32) throws(SQLiteError) {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, index)
        case let .integer(v): code = sqlite3_bind_int64(handle, index, v)
        case let .real(v): code = sqlite3_bind_double(handle, index, v)
        case let .text(v):
            guard v.utf8.count <= Int(Int32.max) else {
                throw SQLiteError(resultCode: SQLITE_TOOBIG, message: "a text value of \(v.utf8.count) bytes is more than SQLite binds", sql: sql)
            }
            code = bindText(v, at: index)
        case let .blob(v):
            code = v.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), Self.transient) }
        }
        guard code == SQLITE_OK else { throw SQLiteError(resultCode: code, message: database.lastMessage, sql: sql) }
    }

    /// Text is bound with its byte count, never as a C string: a string may hold U+0000 (JSON
    /// allows it), which a C string would end at, silently shortening what was saved; and the
    /// count spares SQLite a scan of each value for its end.
    private func bindText(_ text: String, at index: Int32) -> Int32 {
        // A native string lends its bytes in place: `withUTF8` needs a `var` copy, whose retain
        // and release were a write to the string's reference count for every value bound.
        if let code = text.utf8.withContiguousStorageIfAvailable({ bindText(bytes: $0, at: index) }) { return code }
        var text = text
        return text.withUTF8 { bindText(bytes: $0, at: index) }
    }

    private func bindText(bytes: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        // An empty string's buffer may have no address, and a null pointer binds NULL.
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_text(handle, index, "", 0, Self.transient) }
        return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
            sqlite3_bind_text(handle, index, $0, Int32(bytes.count), Self.transient)
        }
    }

    /// Binds `count` values (`value(0)`, `value(1)`, …) to the parameters from `first` on,
    /// runs the statement to completion, resets it and clears its bindings. Text and blob
    /// values are lent to SQLite in place rather than copied: a copied value is a malloc, a
    /// copy and a free per value per row, and a save's rows are mostly text. SQLite may read a
    /// lent value until the parameter is bound again, so the bindings are cleared before the
    /// values can go away.
    public func runLending(count: Int, from first: Int32, _ value: (Int) -> SQLValue) throws(SQLiteError) {
        defer { sqlite3_clear_bindings(handle) }
        try lend(0, count: count, first: first, value)
    }

    /// Binds value `offset` and, while its bytes are lent, the ones after it; runs once all are bound.
    private func lend(_ offset: Int, count: Int, first: Int32, _ value: (Int) -> SQLValue) throws(SQLiteError) {
        guard offset < count else { return try runBound() }
        let index = first + Int32(offset)
        func next() -> Result<Void, SQLiteError> {
            do throws(SQLiteError) { try lend(offset + 1, count: count, first: first, value) } catch { return .failure(error) }
            return .success(())
        }
        let bound = value(offset)
        let outcome: Result<Void, SQLiteError>?
        switch bound {
        case let .text(text) where !text.isEmpty && text.utf8.count <= Int(Int32.max):
            outcome = text.utf8.withContiguousStorageIfAvailable { bytes in
                lent(sqlite3_bind_text(handle, index, UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil), then: next)
            }
        case let .blob(bytes) where !bytes.isEmpty && bytes.count <= Int(Int32.max):
            outcome = bytes.withUnsafeBytes { lent(sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), nil), then: next) }
        default:
            outcome = nil
        }
        // Anything else (numbers, NULL, empty or bridged text) is bound as `bind` binds it.
        if let outcome { return try outcome.get() }
        try bind(bound, at: index)
        try next().get()
    }

    /// Binds `values` from the first parameter on as `run` does and `text` to parameter `index`
    /// without copying it (a history row can be megabytes), runs the statement to completion,
    /// resets it and clears its bindings before the bytes can go away.
    public func run(lendingText text: UnsafeBufferPointer<UInt8>, at index: Int32, _ values: [any SQLBindable]) throws(SQLiteError) {
        defer { sqlite3_clear_bindings(handle) }
        try bind(values)
        let code = text.isEmpty || text.count > Int(Int32.max)
            ? bindText(bytes: text, at: index)
            : sqlite3_bind_text(handle, index, UnsafeRawPointer(text.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(text.count), nil)
        guard code == SQLITE_OK else { throw SQLiteError(resultCode: code, message: database.lastMessage, sql: sql) }
        try runBound()
    }

    /// A destructor of nil is `SQLITE_STATIC`: SQLite reads the bytes where they are.
    private func lent(_ code: Int32, then next: () -> Result<Void, SQLiteError>) -> Result<Void, SQLiteError> {
        guard code == SQLITE_OK else { return .failure(SQLiteError(resultCode: code, message: database.lastMessage, sql: sql)) }
        return next()
    }

    /// Runs the statement with the values bound since the last run, then resets it.
    public func runBound() throws(SQLiteError) {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Steps once: true while a row is available.
    public func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let message = database.lastMessage
            sqlite3_reset(handle)
            throw SQLiteError(resultCode: sqlite3_extended_errcode(database.handle), message: message, sql: sql)
        }
    }

    /// Binds and runs to completion (for statements that return no rows).
    public func run(_ values: [any SQLBindable] = []) throws(SQLiteError) {
        try bind(values)
        while try step() {}
        sqlite3_reset(handle)
    }

    /// Binds, runs and collects every row.
    public func query(_ values: [any SQLBindable] = []) throws(SQLiteError) -> [Row] {
        try bind(values)
        var rows: [Row] = []
        let names = columnNames
        while try step() { rows.append(Row(columns: names, values: currentValues())) }
        sqlite3_reset(handle)
        return rows
    }

    /// Binds, steps and calls `body` for each row without collecting them (for large scans).
    public func forEach(_ values: [any SQLBindable] = [], _ body: (Statement) throws -> Void) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() { try body(self) }
    }

    /// `forEach` that stops stepping once `body` answers false (a scan bounded by what the
    /// rows hold, not only by their count).
    public func forEach(_ values: [any SQLBindable] = [], while body: (Statement) throws -> Bool) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() {
            guard try body(self) else { return }
        }
    }

    /// Names of the result columns, read once per statement (every query's rows carry them).
    public var columnNames: [String] {
        if let cachedColumnNames, cachedColumnNames.count == Int(sqlite3_column_count(handle)) { return cachedColumnNames }
        let names = (0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) }
        cachedColumnNames = names
        return names
    }
    private var cachedColumnNames: [String]?

    public func currentValues() -> [SQLValue] {
        (0..<sqlite3_column_count(handle)).map { value(at: Int($0)) }
    }

    public func value(at index: Int) -> SQLValue {
        let column = Int32(index)
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT: return .text(text(at: column) ?? "")
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
        default: return .null
        }
    }

    public func int64(at index: Int) -> Int64 { sqlite3_column_int64(handle, Int32(index)) }

    /// Whether the column holds text (a reader may then take its bytes with `withText`).
    public func isText(at index: Int) -> Bool { sqlite3_column_type(handle, Int32(index)) == SQLITE_TEXT }

    /// A text column's UTF-8 bytes as SQLite holds them, valid only inside `body` (no String is
    /// made: a fetch writes them straight into its reply); nil when the column is NULL.
    public func withText<R>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        guard let text = sqlite3_column_text(handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        return try body(UnsafeBufferPointer(start: text, count: count))
    }
    public func string(at index: Int) -> String? { text(at: Int32(index)) }

    /// A column's text by its byte count (not up to its first U+0000: see `bindText`). The
    /// count is read after the text, as SQLite asks, so it is the count of the text form.
    private func text(at column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
}
