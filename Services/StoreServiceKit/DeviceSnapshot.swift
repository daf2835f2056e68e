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

    /// Replaces both stores' contents with the snapshot's, or changes nothing: every check runs
    /// before the first write, and both stores' writes share one outcome (each store is its own
    /// SQLite file: the second commits right after the first).
    ///
    /// What stays this device's: each store's identity (`storeUUID`, so object IDs keep their
    /// form and two devices seeded from one snapshot are still two), and counters that must not
    /// go back (history tokens, primary keys), which continue from the higher of the two.
    ///
    /// On a mirroring device (`cloud`), share permissions are the cloud's, never the snapshot's:
    /// each store keeps the share rows it had, and a zone only the snapshot names gets none
    /// (nothing may be changed there) until the companion has fetched it again.
    func importInto(_ stores: StoreSet, cloud: (any StoreCompanion)? = nil, progress: ProgressReporter = .silent) throws -> [String: Int] {
        try validate(against: stores)
        let rows = Progress(total: self.stores.flatMap(\.tables.values).map(\.rows.count).reduce(0, +), reporter: progress)
        let pairs = stores.list.map { store in (store, self.stores.first { $0.name == store.name }!) }
        for (store, _) in pairs { try store.database.beginImmediate() }
        do {
            var counts: [String: Int] = [:]
            for (store, tables) in pairs { counts[store.name] = try Self.replace(store, with: tables, rows: rows, cloud: cloud) }
            rows.finish()
            for (store, _) in pairs { try store.database.execute("COMMIT") }
            return counts
        } catch {
            for (store, _) in pairs where store.database.isInTransaction { try? store.database.execute("ROLLBACK") }
            throw error
        }
    }

    private func validate(against stores: StoreSet) throws {
        guard format == Self.formatName else {
            throw Self.invalid("This is not a device snapshot (format '\(format)'; expected '\(Self.formatName)').", field: "format")
        }
        guard schemaVersion == Self.currentVersion else {
            throw Self.invalid("The snapshot is of format version \(schemaVersion); this store-service reads version \(Self.currentVersion).", field: "schemaVersion")
        }
        guard model == stores.model.name else {
            throw Self.invalid("The snapshot was written with model '\(model)'; this device runs '\(stores.model.name)'.", field: "model")
        }
        let names = Set(self.stores.map(\.name)), mine = Set(stores.list.map(\.name))
        guard names == mine, self.stores.count == names.count else {
            throw Self.invalid("The snapshot holds stores \(self.stores.map(\.name).sorted()); this device has \(mine.sorted()), and each must appear once.", field: "stores")
        }
        for store in stores.list {
            let given = self.stores.first { $0.name == store.name }!
            let mirrored = given.tables.keys.contains { $0.hasPrefix("mirror_") || $0 == PendingLinks.table }
            let present = Set(try Self.tableNames(store.database))
            for (name, table) in given.tables.sorted(by: { $0.key < $1.key }) {
                // A mirrored device's bookkeeping is made on import when this device has none yet.
                guard present.contains(name) || (mirrored && (name.hasPrefix("mirror_") || name == PendingLinks.table)) else {
                    throw Self.invalid("Store \(store.name) has no table '\(name)' (the snapshot's model or version differs).", field: "stores")
                }
                if present.contains(name) {
                    let columns = Set(try Self.columnNames(name, in: store.database))
                    if let unknown = table.columns.first(where: { !columns.contains($0) }) {
                        throw Self.invalid("Store \(store.name), table \(name): no column '\(unknown)' here.", field: "stores")
                    }
                }
                if let row = table.rows.firstIndex(where: { $0.count != table.columns.count }) {
                    throw Self.invalid("Store \(store.name), table \(name), row \(row + 1): \(table.rows[row].count) values for \(table.columns.count) columns (a truncated or edited snapshot?).", field: "stores")
                }
            }
            for required in ["z_metadata", "z_primarykey", "z_transaction", "z_share"] where given.tables[required] == nil {
                throw Self.invalid("Store \(store.name): the snapshot has no table '\(required)' (a truncated or edited snapshot?).", field: "stores")
            }
        }
    }

    /// Replaces one store's rows inside the open transaction; returns how many rows it wrote.
    /// Rows written so far, reported as the `writing` phase.
    final class Progress {
        let total: Int
        let reporter: ProgressReporter
        private(set) var done = 0
        init(total: Int, reporter: ProgressReporter) {
            self.total = total
            self.reporter = reporter
            reporter.report(phase: "writing", done: 0, total: total)
        }
        func add(_ count: Int) {
            done += count
            if done < total { reporter.report(phase: "writing", done: done, total: total) }
        }
        /// The phase's last event only once everything is written (and about to commit).
        func finish() { reporter.report(phase: "writing", done: total, total: total) }
    }

    private static func replace(_ store: PersistentStore, with given: StoreTables, rows progress: Progress, cloud: (any StoreCompanion)?) throws -> Int {
        let database = store.database
        if given.tables.keys.contains(where: { $0.hasPrefix("mirror_") }) { try MirrorTables.create(in: store.database) }
        let cloudShares = cloud == nil ? nil : try database.query("SELECT zone_name, owner_name, permission, updated_at FROM z_share")
        let keys = Dictionary(try database.query("SELECT entity, max FROM z_primarykey").map { ($0[0].string ?? "", $0[1].int64 ?? 0) },
                              uniquingKeysWith: max)
        // sqlite_sequence is left alone: a DELETE never lowers it, so tokens and queue numbers
        // continue above both the old and the imported ones.
        for name in try tableNames(database) { try database.execute("DELETE FROM \"\(name)\"") }
        var written = 0
        for (name, table) in given.tables.sorted(by: { $0.key < $1.key }) where !table.columns.isEmpty {
            let columns = table.columns.map { "\"\($0)\"" }.joined(separator: ", ")
            let marks = Array(repeating: "?", count: table.columns.count).joined(separator: ", ")
            let insert = try database.prepare("INSERT INTO \"\(name)\"(\(columns)) VALUES (\(marks))")
            for (number, row) in table.rows.enumerated() {
                do { try insert.run(row.map(sql)) } catch {
                    throw invalid("Store \(store.name), table \(name), row \(number + 1): \(error) — nothing was imported.", field: "stores")
                }
                if number % 1000 == 999 { progress.add(1000) }
            }
            progress.add(table.rows.count % 1000)
            written += table.rows.count
        }
        if let cloud, let cloudShares { try keepCloudShares(cloudShares, in: store, cloud: cloud) }
        try database.execute("INSERT OR REPLACE INTO z_metadata(key, value) VALUES ('storeUUID', ?)", [store.uuid])
        for (entity, max) in keys {
            try database.execute("INSERT INTO z_primarykey(entity, max) VALUES (?, ?) ON CONFLICT(entity) DO UPDATE SET \"max\" = max(\"max\", excluded.\"max\")",
                                 [entity, max])
        }
        return written
    }

    /// Puts back the share rows the store had before the import (the cloud's word); the zones
    /// only the snapshot named are left to the companion to learn again.
    private static func keepCloudShares(_ rows: [Row], in store: PersistentStore, cloud: any StoreCompanion) throws {
        let database = store.database
        let imported = try database.query("SELECT zone_name, owner_name FROM z_share").map { ZoneID(zoneName: $0[0].string ?? "", ownerName: $0[1].string ?? "") }
        try database.execute("DELETE FROM z_share")
        for row in rows {
            try database.execute("INSERT INTO z_share(zone_name, owner_name, permission, updated_at) VALUES (?, ?, ?, ?)", row.values)
        }
        let known = Set(rows.map { ZoneID(zoneName: $0[0].string ?? "", ownerName: $0[1].string ?? "") })
        try cloud.relearnShares(of: imported.filter { !known.contains($0) }, in: store)
    }

    private static func tableNames(_ database: Database) throws -> [String] {
        try database.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").compactMap { $0[0].string }
    }

    private static func columnNames(_ table: String, in database: Database) throws -> [String] {
        try database.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [table]).compactMap { $0[0].string }
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

    private static func sql(_ value: JSONValue) -> SQLValue {
        switch value {
        case let .int(number): return .integer(Int64(number))
        case let .double(number): return .real(number)
        case let .string(text): return .text(text)
        case let .bool(flag): return .integer(flag ? 1 : 0)
        case let .object(members): return members["base64"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map { .blob([UInt8]($0)) } ?? .null
        default: return .null
        }
    }

    static func invalid(_ message: String, field: String) -> ServiceError {
        ServiceError(.invalidField, message, details: ["field": .string("params.snapshot.\(field)")])
    }
}
