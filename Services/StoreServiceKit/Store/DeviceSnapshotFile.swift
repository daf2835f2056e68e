import MeowWire
import ServiceRuntime

/// A device snapshot file (as `snapshot.export` writes it) read with a `JSONStream` into a
/// `DeviceSnapshotWriter`: rows go into the stores as they are read, so an import takes a chunk
/// of the file and one row in memory, whatever the file's size.
///
/// The writer needs the header before any store, a store's name before its tables and a
/// table's columns before its rows. The export writes them in that order; a member that comes
/// before what it needs (a file written otherwise) is skipped and read again once the rest of
/// its object has been read.
struct DeviceSnapshotFile {
    typealias Failure = JSONParser.Failure

    private var stream: JSONStream
    private let writer: DeviceSnapshotWriter
    /// Called every 1,000 rows with how far into the file the reading is.
    private let reached: (Int) -> Void

    init(_ stream: JSONStream, into writer: DeviceSnapshotWriter, reached: @escaping (Int) -> Void) {
        self.stream = stream
        self.writer = writer
        self.reached = reached
    }

    /// Reads the whole file into the writer (not committed: the caller commits).
    mutating func read() throws {
        try stream.beginObject()
        var format: String?, schemaVersion: Int?, model: String?
        var storesAt: Int?
        var storesRead = false
        var keys: Set<String> = []
        while let key = try stream.nextKey() {
            guard keys.insert(key).inserted else { throw failure("member '\(key)' appears twice") }
            switch key {
            case "format": format = try string(key)
            case "schemaVersion": schemaVersion = try int(key)
            case "model": model = try string(key)
            case "stores":
                if let format, let schemaVersion, let model {
                    try writer.header(format: format, schemaVersion: schemaVersion, model: model)
                    try readStores()
                    storesRead = true
                } else {
                    storesAt = stream.position
                    try stream.skipValue()
                }
            default: try stream.skipValue()
            }
        }
        guard let format, let schemaVersion, let model else { throw failure("the snapshot needs format, schemaVersion and model") }
        if let storesAt {
            try writer.header(format: format, schemaVersion: schemaVersion, model: model)
            try again(at: storesAt) { try $0.readStores() }
        } else if !storesRead {
            throw failure("the snapshot has no member 'stores'")
        }
        guard try stream.atEnd else { throw failure("unexpected data after the JSON value") }
    }

    private mutating func readStores() throws {
        try stream.beginArray()
        while try stream.nextElement() { try readStore() }
    }

    private mutating func readStore() throws {
        try stream.beginObject()
        var name: String?
        var tablesAt: Int?
        var tablesRead = false
        var keys: Set<String> = []
        while let key = try stream.nextKey() {
            guard keys.insert(key).inserted else { throw failure("member '\(key)' appears twice in a store") }
            switch key {
            case "name": name = try string(key)
            case "tables":
                if let name {
                    try writer.beginStore(name)
                    try readTables()
                    tablesRead = true
                } else {
                    tablesAt = stream.position
                    try stream.skipValue()
                }
            default: try stream.skipValue()
            }
        }
        guard let name, tablesRead || tablesAt != nil else { throw failure("a store needs a name and tables") }
        if let tablesAt {
            try writer.beginStore(name)
            try again(at: tablesAt) { try $0.readTables() }
        }
        try writer.endStore()
    }

    private mutating func readTables() throws {
        try stream.beginObject()
        while let name = try stream.nextKey() { try readTable(name) }
    }

    private mutating func readTable(_ name: String) throws {
        try stream.beginObject()
        var columns: [String]?
        var rowsAt: Int?
        var rowsRead = false
        var keys: Set<String> = []
        while let key = try stream.nextKey() {
            guard keys.insert(key).inserted else { throw failure("member '\(key)' appears twice in table \(name)") }
            switch key {
            case "columns":
                guard case let .array(values) = try stream.value() else { throw failure("columns must be an array of names") }
                columns = try values.map { value in
                    guard case let .string(column) = value else { throw failure("columns must be an array of names") }
                    return column
                }
            case "rows":
                if let columns {
                    try writer.beginTable(name, columns: columns)
                    try readRows()
                    rowsRead = true
                } else {
                    rowsAt = stream.position
                    try stream.skipValue()
                }
            default: try stream.skipValue()
            }
        }
        guard let columns, rowsRead || rowsAt != nil else { throw failure("table \(name) needs columns and rows") }
        if let rowsAt {
            try writer.beginTable(name, columns: columns)
            try again(at: rowsAt) { try $0.readRows() }
        }
    }

    private mutating func readRows() throws {
        try stream.beginArray()
        while try stream.nextElement() {
            guard case let .array(row) = try stream.value() else { throw failure("a row must be an array of column values") }
            try writer.row(row)
            if writer.rowsWritten % 1000 == 0 { reached(stream.position) }
        }
    }

    /// Reads the member skipped at `offset`, then goes on from where the walk was.
    private mutating func again(at offset: Int, _ read: (inout Self) throws -> Void) throws {
        let resume = stream.position
        stream.seek(to: offset)
        try read(&self)
        stream.seek(to: resume)
    }

    private mutating func string(_ key: String) throws -> String {
        guard case let .string(text) = try stream.value() else { throw failure("\(key) must be a string") }
        return text
    }

    private mutating func int(_ key: String) throws -> Int {
        guard case let .int(number) = try stream.value() else { throw failure("\(key) must be an integer") }
        return number
    }

    private func failure(_ reason: String) -> Failure { stream.failure(reason) }
}
