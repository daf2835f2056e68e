import CSQLite
import Synchronization

/// In-memory databases made by the same script start from one image of the first one made.
///
/// Running a schema's DDL is mostly SQLite parsing each statement and re-reading the schema
/// after each `CREATE`; loading the finished pages (`sqlite3_deserialize`) is a copy and one
/// parse of the schema. A process that makes several in-memory databases with one script (a
/// store-service's private and shared stores of one model) pays for the script once.
///
/// The key is the script's exact text, so databases share an image only when their schemas and
/// the rows the script writes are the same; whatever differs per database is written after.
enum SchemaImages {
    /// Images by script. The lock is held while the first database of a script is built, so a
    /// second one opened at the same moment waits for the image instead of building its own.
    private static let images = Mutex<[String: [UInt8]]>([:])

    /// A new in-memory database holding what `script` makes: the script is run (in one
    /// transaction) the first time in the process, later ones load its image.
    static func database(madeBy script: String) throws(SQLiteError) -> Database {
        let database = try Database(path: ":memory:")
        try images.withLock { (images) throws(SQLiteError) in
            if let image = images[script] {
                try database.load(image)
            } else {
                try database.execute("BEGIN IMMEDIATE;\n\(script);\nCOMMIT")
                images[script] = try database.image()
            }
        }
        return database
    }
}

extension Database {
    /// An in-memory database holding what `script` makes (`SchemaImages`): run the first time in
    /// the process, loaded from an image of that first database afterwards.
    public static func inMemory(madeBy script: String) throws(SQLiteError) -> Database {
        try SchemaImages.database(madeBy: script)
    }

    /// The main database's pages (`sqlite3_serialize`).
    func image() throws(SQLiteError) -> [UInt8] {
        var size: sqlite3_int64 = 0
        guard let bytes = sqlite3_serialize(handle, "main", &size, 0) else {
            throw SQLiteError(resultCode: SQLITE_NOMEM, message: "could not serialize the database", sql: nil)
        }
        defer { sqlite3_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(size)))
    }

    /// Replaces the main database with `image`'s pages (`sqlite3_deserialize`), in memory and
    /// growable; SQLite frees the copy with the connection.
    func load(_ image: [UInt8]) throws(SQLiteError) {
        guard let copy = sqlite3_malloc64(sqlite3_uint64(image.count))?.assumingMemoryBound(to: UInt8.self) else {
            throw SQLiteError(resultCode: SQLITE_NOMEM, message: "no memory for a database image of \(image.count) bytes", sql: nil)
        }
        image.withUnsafeBufferPointer { copy.update(from: $0.baseAddress!, count: image.count) }
        let flags = UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE)
        let code = sqlite3_deserialize(handle, "main", copy, sqlite3_int64(image.count), sqlite3_int64(image.count), flags)
        guard code == SQLITE_OK else { throw SQLiteError(resultCode: code, message: lastMessage, sql: nil) }
    }
}
