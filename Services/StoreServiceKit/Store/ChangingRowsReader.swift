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
struct ChangingRowsReader {
    /// Below this many rows the plain `RETURNING` costs less than a second connection.
    static let threshold = 256

    private static let thread = WorkerThread(name: "store-changing-rows")

    private let result: WorkerResult<Result<UpdatedRows, any Error>>

    /// Starts `SELECT z_pk, z_uuid FROM table WHERE predicate` on the file at `path`, the rows
    /// put in key order; nil when the thread is busy with another such read.
    static func start(path: String, table: String, predicate: String) -> ChangingRowsReader? {
        let sql = "SELECT z_pk, z_uuid FROM \(table) WHERE \(predicate)"
        return thread.startIfIdle { () -> Result<UpdatedRows, any Error> in
            Result { () throws -> UpdatedRows in
                let database = try Database(path: path, readOnly: true)
                var rows = UpdatedRows()
                try database.readTransaction {
                    try database.prepare(sql).forEach { (row: Statement) -> Void in
                        let key = row.int64(at: 0)
                        if row.withText(at: 1, { rows.append(key: key, uuid: $0) }) == nil { rows.append(key: key, uuid: "") }
                    }
                }
                rows.sortByKey()
                return rows
            }
        }.map(ChangingRowsReader.init(result:))
    }

    /// The rows, once read.
    func rows() throws -> UpdatedRows { try result.value().get() }
}
