import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// A device's two stores as one JSON document (`snapshot.export` / `snapshot.import`): every
/// table of each store, rows as arrays of column values, so a test can put a device back into
/// a state it recorded, or seed one device from another.
struct DeviceSnapshot: Codable, Sendable {
    static let formatName = "meowcare-device-snapshot"
    static let currentVersion = 1

    var format: String
    var schemaVersion: Int
    /// The model the stores were written with (its name): another model's tables do not fit.
    var model: String
    var stores: [StoreTables]

    struct StoreTables: Codable, Sendable {
        var name: String
        var tables: [String: Table]
    }

    struct Table: Codable, Sendable {
        var columns: [String]
        var rows: [[JSONValue]]
    }
}

extension DeviceSnapshot {
    /// Reads every table of every store (the caller holds the coordinator's lock).
    static func export(_ stores: StoreSet, progress: ProgressReporter = .silent) throws -> DeviceSnapshot {
        let total = try stores.list.map { try tableNames($0.database).count }.reduce(0, +)
        var done = 0
        progress.report(phase: "reading", done: 0, total: total)
        let list = try stores.list.map { store in
            var tables: [String: Table] = [:]
            try store.database.readTransaction {
                for name in try tableNames(store.database) {
                    defer { done += 1; progress.report(phase: "reading", done: done, total: total) }
                    let columns = try columnNames(name, in: store.database)
                    let quoted = columns.map { "\"\($0)\"" }.joined(separator: ", ")
                    let rows = try store.database.query("SELECT \(quoted) FROM \"\(name)\" ORDER BY rowid").map { $0.values.map(json) }
                    tables[name] = Table(columns: columns, rows: rows)
                }
            }
            return StoreTables(name: store.name, tables: tables)
        }
        return DeviceSnapshot(format: formatName, schemaVersion: currentVersion, model: stores.model.name, stores: list)
    }

    /// What `export` answers, written to `output` as the rows are read (the caller holds the
    /// coordinator's lock), so a file export holds one row, not the stores: the same document,
    /// its keys sorted, which puts the header before the stores, a store's name before its
    /// tables and a table's columns before its rows (the order an import reads in one pass).
    /// Answers the rows per store, then per table.
    static func write(_ stores: StoreSet, to output: SnapshotOutput, progress: ProgressReporter = .silent) throws -> [String: [String: Int]] {
        let total = try stores.list.map { try tableNames($0.database).count }.reduce(0, +)
        var done = 0
        progress.report(phase: "reading", done: 0, total: total)
        try output.write { text in
            text += "{\"format\":"
            JSONWriter.appendString(formatName, to: &text)
            text += ",\"model\":"
            JSONWriter.appendString(stores.model.name, to: &text)
            text += ",\"schemaVersion\":\(currentVersion),\"stores\":["
        }
        var counts: [String: [String: Int]] = [:]
        for (number, store) in stores.list.enumerated() {
            try output.write { text in
                text += number == 0 ? "{\"name\":" : ",{\"name\":"
                JSONWriter.appendString(store.name, to: &text)
                text += ",\"tables\":{"
            }
            try store.database.readTransaction {
                for (index, name) in try tableNames(store.database).enumerated() {
                    defer { done += 1; progress.report(phase: "reading", done: done, total: total) }
                    let columns = try columnNames(name, in: store.database)
                    try output.write { text in
                        if index > 0 { text += "," }
                        JSONWriter.appendString(name, to: &text)
                        text += ":{\"columns\":"
                        JSONWriter.append(.array(columns.map { .string($0) }), to: &text)
                        text += ",\"rows\":["
                    }
                    var rows = 0
                    let quoted = columns.map { "\"\($0)\"" }.joined(separator: ", ")
                    try store.database.prepare("SELECT \(quoted) FROM \"\(name)\" ORDER BY rowid").forEach { (row: Statement) throws -> Void in
                        try output.write { text in
                            if rows > 0 { text += "," }
                            JSONWriter.append(.array(row.currentValues().map(json)), to: &text)
                        }
                        rows += 1
                    }
                    try output.write("]}")
                    counts[store.name, default: [:]][name] = rows
                }
            }
            try output.write("}}")
        }
        try output.write("]}")
        return counts
    }

    /// Replaces both stores' contents with the snapshot's, or changes nothing
    /// (`DeviceSnapshotWriter` says what stays this device's).
    func importInto(_ stores: StoreSet, cloud: (any StoreCompanion)? = nil, progress: ProgressReporter = .silent) throws -> [String: Int] {
        let total = self.stores.flatMap(\.tables.values).map(\.rows.count).reduce(0, +)
        progress.report(phase: "writing", done: 0, total: total)
        let writer = try DeviceSnapshotWriter(stores, cloud: cloud)
        do {
            try writer.header(format: format, schemaVersion: schemaVersion, model: model)
            for given in self.stores {
                try writer.beginStore(given.name)
                for (name, table) in given.tables.sorted(by: { $0.key < $1.key }) {
                    try writer.beginTable(name, columns: table.columns)
                    for row in table.rows {
                        try writer.row(row)
                        if writer.rowsWritten % 1000 == 0, writer.rowsWritten < total {
                            progress.report(phase: "writing", done: writer.rowsWritten, total: total)
                        }
                    }
                }
                try writer.endStore()
            }
            // The phase's last event only once everything is written (and about to commit).
            progress.report(phase: "writing", done: total, total: total)
            return try writer.commit()
        } catch {
            writer.rollback()
            throw error
        }
    }

    private static func tableNames(_ database: Database) throws -> [String] { try DeviceSnapshotWriter.tableNames(database) }

    private static func columnNames(_ table: String, in database: Database) throws -> [String] {
        try DeviceSnapshotWriter.columnNames(table, in: database)
    }

    private static func json(_ value: SQLValue) -> JSONValue {
        switch value {
        case .null: return .null
        case let .integer(number): return .int(Int(number))
        case let .real(number): return .double(number)
        case let .text(text): return .string(text)
        case let .blob(bytes): return ["base64": .string(Data(bytes).base64EncodedString())]
        }
    }
}
