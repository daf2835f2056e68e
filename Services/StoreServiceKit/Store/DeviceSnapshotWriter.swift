import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// Puts a device snapshot into both stores as it is read, row by row, so an import of any size
/// holds one row at a time. Whoever reads the snapshot (an inline one, or a file through
/// `JSONStream`) calls, in order: `header`, then per store `beginStore`, per table `beginTable`
/// and `row`s, `endStore`, and last `commit`. Both stores' writes run in one transaction each,
/// begun before the first write and committed together at the end: any refusal on the way (a
/// check below, a row SQLite refuses, a file that turns out truncated) rolls both back
/// (`rollback`), so a refused snapshot changes nothing.
///
/// What stays this device's: each store's identity (`storeUUID`, so object IDs keep their form
/// and two devices seeded from one snapshot are still two), and counters that must not go back
/// (history tokens, primary keys), which continue from the higher of the two. On a mirroring
/// device (`cloud`), share permissions are the cloud's, never the snapshot's: each store keeps
/// the share rows it had, and a zone only the snapshot names gets none (nothing may be changed
/// there) until the companion has fetched it again.
final class DeviceSnapshotWriter {
    private let stores: StoreSet
    private let cloud: (any StoreCompanion)?
    private var seen: [String] = []
    private var current: StoreState?
    private var table: TableState?
    private(set) var counts: [String: Int] = [:]
    private(set) var rowsWritten = 0

    /// The store being written: what it had that the import keeps, and the tables written so far.
    private struct StoreState {
        var store: PersistentStore
        var present: Set<String>
        var tables: Set<String> = []
        var cloudShares: [Row]?
        var keys: [String: Int64]
        var written = 0
    }

    private struct TableState {
        var name: String
        var columns: Int
        var insert: Statement?
        /// z_share's permission column: read back as a `SharePermission`, so a spelling outside
        /// CloudKit's is refused here rather than kept and read as something nobody granted.
        var permissionColumn: Int?
        var row = 0
    }

    /// Begins both stores' transactions (the caller holds the coordinator's lock).
    init(_ stores: StoreSet, cloud: (any StoreCompanion)?) throws {
        self.stores = stores
        self.cloud = cloud
        do {
            for store in stores.list { try store.database.beginImmediate() }
        } catch {
            rollback()
            throw error
        }
    }

    func header(format: String, schemaVersion: Int, model: String) throws {
        guard format == DeviceSnapshot.formatName else {
            throw Self.invalid("This is not a device snapshot (format '\(format)'; expected '\(DeviceSnapshot.formatName)').", field: "format")
        }
        guard schemaVersion == DeviceSnapshot.currentVersion else {
            throw Self.invalid("The snapshot is of format version \(schemaVersion); this store-service reads version \(DeviceSnapshot.currentVersion).", field: "schemaVersion")
        }
        guard model == stores.model.name else {
            throw Self.invalid("The snapshot was written with model '\(model)'; this device runs '\(stores.model.name)'.", field: "model")
        }
    }

    /// Empties the store named `name` for the snapshot's rows, keeping what stays this device's.
    func beginStore(_ name: String) throws {
        guard let store = stores.list.first(where: { $0.name == name }), !seen.contains(name) else {
            throw storesMismatch(seen + [name])
        }
        seen.append(name)
        let database = store.database
        let cloudShares = cloud == nil ? nil : try database.query("SELECT zone_name, owner_name, permission, updated_at FROM z_share")
        let keys = Dictionary(try database.query("SELECT entity, max FROM z_primarykey").map { ($0[0].string ?? "", $0[1].int64 ?? 0) },
                              uniquingKeysWith: max)
        let present = try Self.tableNames(database)
        // sqlite_sequence is left alone: a DELETE never lowers it, so tokens and queue numbers
        // continue above both the old and the imported ones.
        for name in present { try database.execute("DELETE FROM \"\(name)\"") }
        current = StoreState(store: store, present: Set(present), cloudShares: cloudShares, keys: keys)
    }

    /// Starts one table of the current store: it must be one this device has (a mirrored
    /// device's bookkeeping is made here when this device has none yet), with columns it has.
    func beginTable(_ name: String, columns: [String]) throws {
        guard var current else { throw Self.invalid("A table came before its store.", field: "stores") }
        let store = current.store
        guard !current.tables.contains(name) else {
            throw Self.invalid("Store \(store.name) has table '\(name)' twice (an edited snapshot?).", field: "stores")
        }
        let mirrored = name.hasPrefix("mirror_") || name == PendingLinks.table
        if !current.present.contains(name), mirrored {
            try MirrorTables.create(in: store.database)
            current.present = Set(try Self.tableNames(store.database))
        }
        guard current.present.contains(name) else {
            throw Self.invalid("Store \(store.name) has no table '\(name)' (the snapshot's model or version differs).", field: "stores")
        }
        let known = Set(try Self.columnNames(name, in: store.database))
        if let unknown = columns.first(where: { !known.contains($0) }) {
            throw Self.invalid("Store \(store.name), table \(name): no column '\(unknown)' here.", field: "stores")
        }
        current.tables.insert(name)
        self.current = current
        var insert: Statement?
        if !columns.isEmpty {
            let quoted = columns.map { "\"\($0)\"" }.joined(separator: ", ")
            let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
            insert = try store.database.prepare("INSERT INTO \"\(name)\"(\(quoted)) VALUES (\(marks))")
        }
        table = TableState(name: name, columns: columns.count, insert: insert,
                           permissionColumn: name == "z_share" ? columns.firstIndex(of: "permission") : nil)
    }

    /// One row of the current table, its values in the table's column order.
    func row(_ values: [JSONValue]) throws {
        guard var table, let current else { throw Self.invalid("A row came before its table.", field: "stores") }
        table.row += 1
        self.table = table
        let store = current.store.name
        guard values.count == table.columns else {
            throw Self.invalid("Store \(store), table \(table.name), row \(table.row): \(values.count) values for \(table.columns) columns (a truncated or edited snapshot?).", field: "stores")
        }
        if let column = table.permissionColumn, SharePermission(rawValue: values[column].stringValue ?? "") == nil {
            throw Self.invalid("Store \(store), table \(table.name), row \(table.row): the permission \(JSONWriter.text(values[column])) is not "
                               + "\(SharePermission.vocabularyName) (\(SharePermission.spellings)) — nothing was imported.", field: "stores")
        }
        if let insert = table.insert {
            do { try insert.run(values.map(Self.sql)) } catch {
                throw Self.invalid("Store \(store), table \(table.name), row \(table.row): \(error) — nothing was imported.", field: "stores")
            }
        }
        self.current?.written += 1
        rowsWritten += 1
    }

    /// Finishes the current store: every table a store needs was there; what stays this
    /// device's goes back.
    func endStore() throws {
        guard let current else { return }
        table = nil
        self.current = nil
        let store = current.store, database = store.database
        for required in ["z_metadata", "z_primarykey", "z_transaction", "z_share"] where !current.tables.contains(required) {
            throw Self.invalid("Store \(store.name): the snapshot has no table '\(required)' (a truncated or edited snapshot?).", field: "stores")
        }
        if let cloud, let shares = current.cloudShares { try Self.keepCloudShares(shares, in: store, cloud: cloud) }
        try database.execute("INSERT OR REPLACE INTO z_metadata(key, value) VALUES ('storeUUID', ?)", [store.uuid])
        for (entity, max) in current.keys {
            try database.execute("INSERT INTO z_primarykey(entity, max) VALUES (?, ?) ON CONFLICT(entity) DO UPDATE SET \"max\" = max(\"max\", excluded.\"max\")",
                                 [entity, max])
        }
        counts[store.name] = current.written
    }

    /// Commits both stores once every store of this device was written; rows per store.
    func commit() throws -> [String: Int] {
        guard current == nil, Set(seen) == Set(stores.list.map(\.name)) else { throw storesMismatch(seen) }
        for store in stores.list { try store.database.execute("COMMIT") }
        return counts
    }

    /// Undoes everything written so far (any refusal on the way).
    func rollback() {
        for store in stores.list where store.database.isInTransaction { try? store.database.execute("ROLLBACK") }
    }

    private func storesMismatch(_ names: [String]) -> ServiceError {
        Self.invalid("The snapshot holds stores \(names.sorted()); this device has \(stores.list.map(\.name).sorted()), and each must appear once.", field: "stores")
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

    static func tableNames(_ database: Database) throws -> [String] {
        try database.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").compactMap { $0[0].string }
    }

    static func columnNames(_ table: String, in database: Database) throws -> [String] {
        try database.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [table]).compactMap { $0[0].string }
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
