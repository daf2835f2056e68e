import SQLiteKit

/// Reads the key and uuid of the rows a writer's statement is about to change, on a thread and a
/// read-only connection of their own, while the writer runs the statement without `RETURNING`.
///
/// SQLite collects a `RETURNING` statement's rows before it hands out the first; for a bulk
/// UPDATE (the orphan repair) that was about a fifth of the statement. The writer must already
/// hold the write lock (`BEGIN IMMEDIATE`) when the read starts: no one can commit until it
/// does, so the reader's snapshot is the committed state the writer's statement starts from, and
/// the rows it finds are the rows the statement changes (provided the transaction changed none
/// of them before; the caller checks the counts agree).
struct ChangingRowsReader<Made: Sendable> {
    /// Below this many rows the plain `RETURNING` costs less than a second connection.
    static var threshold: Int { 256 }

    private let result: WorkerResult<Result<(rows: UpdatedRows, made: Made), any Error>>

    /// Starts `SELECT z_pk, z_uuid FROM table WHERE predicate` on the file at `path`; the rows,
    /// put in key order, are handed to `make` on the same thread (what the writer will need
    /// from them, made beside its statement too). Nil when the thread is busy with another read.
    static func start(path: String, table: String, predicate: String,
                      make: @escaping @Sendable (UpdatedRows) -> Made) -> ChangingRowsReader? {
        let sql = "SELECT z_pk, z_uuid FROM \(table) WHERE \(predicate)"
        return changingRowsThread.startIfIdle { () -> Result<(rows: UpdatedRows, made: Made), any Error> in
            Result { () throws -> (rows: UpdatedRows, made: Made) in
                let database = try Database(path: path, readOnly: true)
                var rows = UpdatedRows()
                try database.readTransaction {
                    try database.prepare(sql).forEach { (row: Statement) -> Void in rows.append(row: row) }
                }
                rows.sortByKey()
                return (rows, make(rows))
            }
        }.map(ChangingRowsReader.init(result:))
    }

    /// The rows and what `make` made of them, once read.
    func value() throws -> (rows: UpdatedRows, made: Made) { try result.value().get() }
}

/// One thread for every such read (a generic type cannot hold a static stored property).
private let changingRowsThread = WorkerThread(name: "store-changing-rows")
