import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// The rows of a cloud snapshot written into the cloud as they are read (`admin.importSnapshot`),
/// so an import of any size holds one row at a time. Whoever reads the snapshot calls `header`
/// first, then per table `beginTable` and its `row`s; all of it inside one transaction, so any
/// refusal on the way (a row below, a file that turns out truncated) changes nothing.
final class CloudSnapshotRows {
    private let state: CloudTransaction
    /// The credentials users have in this cloud now (a null one in the snapshot keeps its user's).
    private let known: [String: String]
    private var seen: Set<String> = []
    private var table: (name: String, columns: [String], sql: String, row: Int)?
    private(set) var rowsWritten = 0

    init(_ state: CloudTransaction, known: [String: String]) {
        self.state = state
        self.known = known
    }

    func header(format: String, schemaVersion: Int) throws {
        guard format == "meowcare-cloud-snapshot", schemaVersion == CloudSchema.version else {
            throw WireError(.invalidArguments, "Not a snapshot of schema version \(CloudSchema.version) (format meowcare-cloud-snapshot).")
        }
    }

    /// Starts a table; false for one this cloud does not keep (its rows are not read).
    func beginTable(_ name: String) throws -> Bool {
        guard seen.insert(name).inserted else { throw WireError(.invalidArguments, "Table \(name) appears twice in the snapshot.") }
        guard let columns = CloudSchema.snapshotTables.first(where: { $0.name == name })?.columns else {
            table = nil
            return false
        }
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        table = (name, columns, "INSERT INTO \(name)(\(columns.joined(separator: ", "))) VALUES (\(placeholders))", 0)
        return true
    }

    func row(_ given: [JSONValue]) throws {
        guard var table else { return }
        table.row += 1
        self.table = table
        let number = table.row, columns = table.columns
        var row = given
        if table.name == "users", row.count == columns.count { row = try withKnownCredential(row, number: number, columns: columns) }
        // Columns added since a snapshot was written take their defaults (`CloudSchema.addedColumns`).
        let added = CloudSchema.addedColumns.filter { $0.table == table.name }
        let missing = columns.count - row.count
        if missing > 0, missing <= added.count { row += added.suffix(missing).map(\.value) }
        guard row.count == columns.count else {
            throw WireError(.invalidArguments, "Table \(table.name): each row needs \(columns.count) values.")
        }
        var values = row.map(CloudEngine.sql)
        // Change pages send a record's stored fields text as it is: it must be the canonical
        // text a save would have stored, or one bad row would spoil every page.
        if table.name == "records", let fieldsColumn = columns.firstIndex(of: "fields"), case let .text(text) = values[fieldsColumn] {
            guard let fields = (try? JSONParser.parse(text))?.objectValue else {
                throw WireError(.invalidArguments, "Table records, row \(number): fields is not a JSON object of record fields.",
                                details: ["table": "records", "row": .int(number)])
            }
            values[fieldsColumn] = .text(RecordFields(fields).text)
        }
        if table.name == "subscriptions" { try CloudEngine.checkSubscriptionRow(values, row: number, state: state) }
        try state.db.execute(table.sql, values)
        rowsWritten += 1
    }

    /// A users row with a null credential given the one its user has here now; an empty one is refused.
    private func withKnownCredential(_ row: [JSONValue], number: Int, columns: [String]) throws -> [JSONValue] {
        guard let nameColumn = columns.firstIndex(of: "name"), let credentialColumn = columns.firstIndex(of: "credential") else { return row }
        if row[credentialColumn] == "" {
            throw WireError(.invalidArguments, "Table users, row \(number): a credential must not be empty (a hello with an empty credential would act as this user).",
                            details: ["table": "users", "row": .int(number)])
        }
        guard row[credentialColumn] == .null else { return row }
        let user = row[nameColumn].stringValue ?? ""
        guard let credential = known[user], !credential.isEmpty else {
            throw WireError(.invalidArguments,
                            "Table users, row \(number): user '\(user)' has no credential in the snapshot and none in this cloud. Export with params.includeCredentials true to move users to another cloud, or create the user first.",
                            details: ["table": "users", "row": .int(number), "user": .string(user)])
        }
        var row = row
        row[credentialColumn] = .string(credential)
        return row
    }
}

extension CloudEngine {
    /// admin.importSnapshot: replaces the whole state with the rows `feed` hands over (a snapshot
    /// inline, or one read from a file), in one transaction. A user whose credential the snapshot
    /// leaves out (null) keeps the credential it has in this cloud; one this cloud does not know
    /// is refused (export with includeCredentials to move users).
    func importSnapshot(_ feed: (CloudSnapshotRows) throws -> Void) throws -> ImportResult {
        let known = credentialsByUser()
        let result = try locks.exclusive { try write { state in
            for table in CloudSchema.snapshotTables { try state.db.execute("DELETE FROM \(table.name)") }
            try feed(CloudSnapshotRows(state, known: known))
            let imported = try state.db.scalar("SELECT value FROM meta WHERE key = 'seq'")?.int64 ?? 0
            // The sequence never goes back (change tokens are positions in it): keep counting from whichever is higher.
            state.seq = max(state.seq, imported)
            try state.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('seq', ?)", [state.seq])
            try state.db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('databaseHorizon', 0)")
            try state.ensureDefaultZones()
            try state.db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schemaVersion', \(CloudSchema.version))")
            return ImportResult(users: try state.db.scalar("SELECT count(*) FROM users")?.int ?? 0,
                                zones: try state.db.scalar("SELECT count(*) FROM zones")?.int ?? 0,
                                records: try state.db.scalar("SELECT count(*) FROM records WHERE deleted = 0")?.int ?? 0)
        } }
        try reloadAccounts()
        try reloadFieldSchema()
        return result
    }

    /// admin.importSnapshot with the snapshot inline.
    public func importSnapshot(_ snapshot: CloudSnapshot, progress: ProgressReporter = .silent) throws -> ImportResult {
        let total = CloudSchema.snapshotTables.map { snapshot.tables[$0.name]?.count ?? 0 }.reduce(0, +)
        return try importSnapshot { rows in
            try rows.header(format: snapshot.format, schemaVersion: snapshot.schemaVersion)
            progress.report(phase: "writing", done: 0, total: total)
            for table in CloudSchema.snapshotTables {
                guard let given = snapshot.tables[table.name], try rows.beginTable(table.name) else { continue }
                for row in given {
                    try rows.row(row)
                    if rows.rowsWritten % 1000 == 0, rows.rowsWritten < total { progress.report(phase: "writing", done: rows.rowsWritten, total: total) }
                }
            }
            progress.report(phase: "writing", done: total, total: total)
        }
    }
}
