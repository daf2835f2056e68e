import CloudWire
import FoundationEssentials
import MeowWire
import SQLiteKit
import StoreWire

/// One persistent store: one SQLite file (or one in-memory database) holding the entities of
/// one model configuration, with its own identity, history and share metadata.
///
/// Storage layout (why): one table per entity, `e_<Entity>`, with a column per attribute
/// (`a_<name>`) and per to-one relationship (`r_<name>`, the destination's primary key in the
/// same store — cross-store relationships are refused, so a plain integer suffices). Rows are
/// real SQLite rows, so predicates, sorts and limit/offset run inside SQLite and stream; the
/// model's indexes become SQLite indexes. System columns: `z_pk` (the `p<n>` of the object ID),
/// `z_version` (optimistic locking, bumped by every save), `z_uuid` (the stable business id the
/// cloud mirror uses as record name) and `z_zone` (the cloud zone of shared objects, as
/// `owner/zoneName`: CloudKit names a zone by both, and two owners may use one zone name).
/// Primary keys come from `z_primarykey` (Core Data's Z_PRIMARYKEY), so a permanent ID can be
/// handed out before the save.
///
/// `@unchecked Sendable`: a store is reachable only through `PersistentStoreCoordinator`,
/// whose lock is held for every use, so no two threads touch its database at once. Its reading
/// companion (`readingCompanion()`) has a connection of its own, used by the mirror's send
/// alone (one send at a time).
package final class PersistentStore: @unchecked Sendable {
    let url: String
    let filePath: String?
    let configuration: StoreConfiguration
    package let model: ManagedObjectModel
    /// The device's clock (its coordinator's): history times are read from it.
    let clock: DeviceClock
    /// A binary value larger than this many bytes goes to the cloud as an asset.
    package let assetThreshold: Int
    package let database: Database
    package private(set) var uuid: String = ""
    /// What opening this store migrated (nil for a new store).
    private(set) var migration: StoreMigration.Report?
    /// Opening found no tables (every in-memory store, a new file): until its first write the
    /// store holds its schema and nothing else.
    package private(set) var openedEmpty = false
    /// The entities this store holds, by name.
    package let entities: [String: EntityDescription]
    /// Per entity, the statements that read one row by primary key and by uuid (their text is
    /// built once: building it per read was a twentieth of a mirror send).
    private let rowByKeySQL: [String: String]
    private let rowByUUIDSQL: [String: String]

    package var name: String { configuration.name }
    package var scope: StoreScope { configuration.scope }

    /// Opens (creating if needed) the store at `filePath`, or an in-memory store when nil.
    init(url: String, filePath: String?, configuration: StoreConfiguration, model: ManagedObjectModel,
         clock: DeviceClock = DeviceClock(), assetThreshold: Int = StoreOptions.defaultAssetThreshold) throws {
        self.url = url
        self.assetThreshold = assetThreshold
        self.clock = clock
        self.filePath = filePath
        self.configuration = configuration
        self.model = model
        database = try filePath.map { try Database(path: $0) } ?? Database.inMemory()
        // A 32 MiB page cache: saves and pages of fetches re-read far fewer pages.
        try database.execute("PRAGMA cache_size = -32768")
        database.checkpointInBackground()
        var entities: [String: EntityDescription] = [:]
        for name in configuration.entities { entities[name] = model.entity(named: name) }
        self.entities = entities
        var byKey: [String: String] = [:], byUUID: [String: String] = [:]
        for entity in model.entities {
            let select = "SELECT \(Self.selectList(entity)) FROM \(Self.table(entity.name)) t0 WHERE "
            byKey[entity.name] = select + "t0.z_pk = ?"
            byUUID[entity.name] = select + "t0.z_uuid = ?"
        }
        rowByKeySQL = byKey
        rowByUUIDSQL = byUUID
        try createSchema()
    }

    /// The reading connection beside this store (`init(readingBeside:)`), made on first use.
    /// Made under the coordinator's lock; used by the mirror's send alone (one at a time), which
    /// reads a batch from it without the lock. Dies with this store, so a store replaced at the
    /// same path never has its successor read through the old file.
    private var reader: PersistentStore??

    package func readingCompanion() throws -> PersistentStore? {
        if let reader { return reader }
        let made = try PersistentStore(readingBeside: self)
        reader = .some(made)
        return made
    }

    /// A second, read-only connection to `store`'s file, for reading beside its writer: a read
    /// transaction on it sees the last commit and never waits for (or blocks) the writer (WAL).
    /// Nil for an in-memory store (its database is its one connection's). Not the writer's
    /// lock's: whoever makes it serialises its own use.
    init?(readingBeside store: PersistentStore) throws {
        guard let filePath = store.filePath else { return nil }
        url = store.url
        self.filePath = filePath
        configuration = store.configuration
        model = store.model
        clock = store.clock
        assetThreshold = store.assetThreshold
        database = try Database(path: filePath, readOnly: true)
        try database.execute("PRAGMA cache_size = -32768")
        uuid = store.uuid
        entities = store.entities
        rowByKeySQL = store.rowByKeySQL
        rowByUUIDSQL = store.rowByUUIDSQL
    }

    package static func table(_ entity: String) -> String { "\"e_\(entity)\"" }
    static func column(_ property: String, entity: EntityDescription) -> String {
        entity.attribute(property) != nil ? "\"a_\(property)\"" : "\"r_\(property)\""
    }

    static func sqlType(_ type: AttributeType) -> String {
        switch type {
        case .string, .date, .decimal, .uuid, .uri: return "TEXT"
        case .integer, .integer16, .integer32, .boolean: return "INTEGER"
        case .double, .float: return "REAL"
        case .binary, .transformable: return "BLOB"
        }
    }

    private func createSchema() throws {
        try database.transaction {
            // A database without tables (every in-memory store, a new file) has no older layout
            // to upgrade: the probes for one are skipped (a tenth of a new store's opening).
            let fresh = try database.scalar("SELECT 1 FROM sqlite_master LIMIT 1") == nil
            openedEmpty = fresh
            try database.execute("""
                CREATE TABLE IF NOT EXISTS z_metadata(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS z_primarykey(entity TEXT PRIMARY KEY, max INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS z_transaction(token INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL,
                    author TEXT NOT NULL, context_name TEXT, changes TEXT NOT NULL DEFAULT '[]');
                CREATE TABLE IF NOT EXISTS z_share(zone_name TEXT NOT NULL, owner_name TEXT NOT NULL,
                    permission TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY(zone_name, owner_name));
                """)
            let zonesByName = try !fresh && database.scalar("SELECT 1 FROM z_metadata WHERE key = 'storeUUID'") != nil
                && database.scalar("SELECT 1 FROM z_metadata WHERE key = 'zoneKeys'") == nil
            if !fresh { try HistoryChanges.migrateChangeRows(database) }
            let ordered = entities.values.sorted(by: { $0.name < $1.name })
            migration = fresh ? nil : try StoreMigration(database: database, storeName: configuration.name).migrate(to: ordered)
            for entity in ordered {
                let table = Self.table(entity.name)
                var columns = ["z_pk INTEGER PRIMARY KEY", "z_version INTEGER NOT NULL", "z_uuid TEXT NOT NULL UNIQUE", "z_zone TEXT"]
                columns += entity.attributes.map { "\"a_\($0.name)\" \(Self.sqlType($0.type))" }
                columns += entity.toOneRelationships.map { "\"r_\($0.name)\" INTEGER" }
                try database.execute("CREATE TABLE IF NOT EXISTS \(table)(\(columns.joined(separator: ", ")))")
                // Lightweight migration: add the columns a newer model has.
                if !fresh {
                    let existing = Set(try database.query("SELECT name FROM pragma_table_info('e_\(entity.name)')").compactMap { $0[0].string })
                    for attribute in entity.attributes where !existing.contains("a_\(attribute.name)") {
                        try database.execute("ALTER TABLE \(table) ADD COLUMN \"a_\(attribute.name)\" \(Self.sqlType(attribute.type))")
                    }
                    for relationship in entity.toOneRelationships where !existing.contains("r_\(relationship.name)") {
                        try database.execute("ALTER TABLE \(table) ADD COLUMN \"r_\(relationship.name)\" INTEGER")
                    }
                }
                // Every to-one relationship is indexed (inverse lookups, delete rules), unless a
                // model index already starts with it: each index costs every insert.
                for relationship in entity.toOneRelationships where !entity.indexes.contains(where: { $0.first == relationship.name }) {
                    try database.execute("CREATE INDEX IF NOT EXISTS \"i_\(entity.name)_\(relationship.name)\" ON \(table)(\"r_\(relationship.name)\")")
                }
                for index in entity.indexes {
                    let name = "i_\(entity.name)_" + index.joined(separator: "_")
                    let columns = index.map { Self.column($0, entity: entity) }.joined(separator: ", ")
                    try database.execute("CREATE INDEX IF NOT EXISTS \"\(name)\" ON \(table)(\(columns))")
                }
                try database.execute("INSERT OR IGNORE INTO z_primarykey(entity, max) VALUES (?, 0)", [entity.name])
            }
            if zonesByName { try migrateZoneKeys() }
            try database.execute("INSERT OR REPLACE INTO z_metadata(key, value) VALUES ('schema', ?)",
                                 [StoreMigration.text(of: ordered)])
            try database.execute("INSERT OR IGNORE INTO z_metadata(key, value) VALUES ('zoneKeys', '1')")
            if let stored = try database.scalar("SELECT value FROM z_metadata WHERE key = 'storeUUID'")?.string {
                uuid = stored
            } else {
                uuid = UUID().uuidString
                try database.execute("INSERT INTO z_metadata(key, value) VALUES ('storeUUID', ?)", [uuid])
                try database.execute("INSERT INTO z_metadata(key, value) VALUES ('model', ?)", [model.name])
                try database.execute("INSERT INTO z_metadata(key, value) VALUES ('configuration', ?)", [configuration.name])
            }
        }
    }

    /// Stores written before zones were named by owner too kept `z_zone` as the zone name and
    /// one share row per zone name: each row's zone gains the owner its share row named, and the
    /// share table is keyed by (zone, owner). Runs once, in the schema's transaction.
    private func migrateZoneKeys() throws {
        for entity in entities.values {
            try database.execute("""
                UPDATE \(Self.table(entity.name)) SET z_zone = coalesce((SELECT owner_name FROM z_share WHERE zone_name = z_zone LIMIT 1), ?) || '/' || z_zone
                WHERE z_zone IS NOT NULL
                """, [ZoneID.defaultOwner])
        }
        let keyed = try database.scalar("SELECT count(*) FROM pragma_table_info('z_share') WHERE pk > 0")?.int ?? 0
        guard keyed < 2 else { return }
        try database.execute("""
            CREATE TABLE z_share_keyed(zone_name TEXT NOT NULL, owner_name TEXT NOT NULL, permission TEXT NOT NULL,
                updated_at TEXT NOT NULL, PRIMARY KEY(zone_name, owner_name));
            INSERT INTO z_share_keyed SELECT zone_name, owner_name, permission, updated_at FROM z_share;
            DROP TABLE z_share;
            ALTER TABLE z_share_keyed RENAME TO z_share;
            """)
    }

    package func holds(_ entity: String) -> Bool { entities[entity] != nil }

    // MARK: Rows

    /// A stored row: system columns and the values of `entity.storedPropertyNames`, in order.
    package struct StoredRow {
        package var primaryKey: Int64
        var version: Int64
        package var uuid: String
        package var zone: String?
        package var values: [SQLValue]

        package init(primaryKey: Int64, version: Int64, uuid: String, zone: String?, values: [SQLValue]) {
            (self.primaryKey, self.version, self.uuid, self.zone, self.values) = (primaryKey, version, uuid, zone, values)
        }
    }

    func selectList(_ entity: EntityDescription, alias: String = "t0") -> String { Self.selectList(entity, alias: alias) }

    static func selectList(_ entity: EntityDescription, alias: String = "t0") -> String {
        (["z_pk", "z_version", "z_uuid", "z_zone"].map { "\(alias).\($0)" }
            + entity.storedPropertyNames.map { "\(alias).\(Self.column($0, entity: entity))" }).joined(separator: ", ")
    }

    static func row(from statement: Statement, propertyCount: Int) -> StoredRow {
        StoredRow(primaryKey: statement.int64(at: 0), version: statement.int64(at: 1), uuid: statement.string(at: 2) ?? "",
                  zone: statement.string(at: 3), values: (0..<propertyCount).map { statement.value(at: 4 + $0) })
    }

    package func read(_ entity: EntityDescription, primaryKey: Int64) throws -> StoredRow? {
        try readOne(entity, rowByKeySQL, column: "z_pk", primaryKey)
    }

    /// The row of `entity` whose object uuid is `uuid` (one lookup through the uuid index).
    package func read(_ entity: EntityDescription, uuid: String) throws -> StoredRow? {
        try readOne(entity, rowByUUIDSQL, column: "z_uuid", uuid)
    }

    private func readOne(_ entity: EntityDescription, _ statements: [String: String], column: String, _ value: any SQLBindable) throws -> StoredRow? {
        let sql = statements[entity.name] ?? "SELECT \(selectList(entity)) FROM \(Self.table(entity.name)) t0 WHERE t0.\(column) = ?"
        var found: StoredRow?
        let count = entity.storedPropertyNames.count
        try database.cached(sql).forEach([value]) { found = Self.row(from: $0, propertyCount: count) }
        return found
    }

    func exists(_ entity: String, primaryKey: Int64) throws -> Bool {
        try database.scalar("SELECT 1 FROM \(Self.table(entity)) WHERE z_pk = ?", [primaryKey]) != nil
    }

    /// Reserves `count` primary keys for `entity`; returns the first.
    package func allocatePrimaryKeys(_ entity: String, count: Int) throws -> Int64 {
        try database.execute("UPDATE z_primarykey SET max = max + ? WHERE entity = ?", [count, entity])
        let max = try database.scalar("SELECT max FROM z_primarykey WHERE entity = ?", [entity])?.int64 ?? Int64(count)
        return max - Int64(count) + 1
    }

    /// Prepared inserts by entity name: a save of many objects binds and steps, nothing more.
    private var insertStatements: [String: Statement] = [:]

    package func insert(_ entity: EntityDescription, row: StoredRow) throws {
        try Self.step(insertStatement(entity), row)
    }

    /// The prepared insert of `entity`'s rows (`step` runs it for one row).
    func insertStatement(_ entity: EntityDescription) throws -> Statement {
        if let cached = insertStatements[entity.name] { return cached }
        let names = entity.storedPropertyNames
        let columns = (["z_pk", "z_version", "z_uuid", "z_zone"] + names.map { Self.column($0, entity: entity) }).joined(separator: ", ")
        let marks = Array(repeating: "?", count: names.count + 4).joined(separator: ", ")
        let statement = try database.cached("INSERT INTO \(Self.table(entity.name))(\(columns)) VALUES (\(marks))")
        insertStatements[entity.name] = statement
        return statement
    }

    /// Binds `row` to an insert statement of its entity and runs it. Touches only the
    /// statement's connection, so `RowStepper` may call it from its thread.
    static func step(_ statement: Statement, _ row: StoredRow) throws(SQLiteError) {
        try statement.bind(.integer(row.primaryKey), at: 1)
        try statement.bind(.integer(row.version), at: 2)
        try statement.runLending(count: row.values.count + 2, from: 3) { offset in
            switch offset {
            case 0: .text(row.uuid)
            case 1: SQLValue(row.zone)
            default: row.values[offset - 2]
            }
        }
    }

    /// Writes `changes` (property name → storage value) and sets the version.
    func update(_ entity: EntityDescription, primaryKey: Int64, changes: [(String, SQLValue)], version: Int64, zone: String?? = nil) throws {
        var assignments = ["z_version = ?"]
        var values: [any SQLBindable] = [version]
        if let zone { assignments.append("z_zone = ?"); values.append(SQLValue(zone)) }
        for (name, value) in changes {
            assignments.append("\(Self.column(name, entity: entity)) = ?")
            values.append(value)
        }
        values.append(primaryKey)
        try database.execute("UPDATE \(Self.table(entity.name)) SET \(assignments.joined(separator: ", ")) WHERE z_pk = ?", values)
    }

    func delete(_ entity: String, primaryKey: Int64) throws {
        try database.execute("DELETE FROM \(Self.table(entity)) WHERE z_pk = ?", [primaryKey])
    }

    /// Primary keys of `entity` rows whose to-one `relationship` points at `primaryKey`.
    package func referencing(_ entity: String, relationship: String, primaryKey: Int64) throws -> [Int64] {
        try database.query("SELECT z_pk FROM \(Self.table(entity)) WHERE \"r_\(relationship)\" = ?", [primaryKey]).compactMap { $0[0].int64 }
    }

    package func objectID(_ entity: String, _ primaryKey: Int64) -> ObjectID {
        .permanent(storeUUID: uuid, entity: entity, primaryKey: primaryKey)
    }

    // MARK: History

    /// Starts a history transaction inside the current SQLite transaction; returns its token.
    func beginHistoryTransaction(author: String, contextName: String?) throws -> Int64 {
        // Microseconds: the latest-edit policy orders edits from different devices by these
        // times, and two saves a round trip apart must not tie.
        let now = ISOTime.string(seconds: clock.seconds(), fractionDigits: 6)
        try database.execute("INSERT INTO z_transaction(timestamp, author, context_name) VALUES (?, ?, ?)",
                             [now, author, SQLValue(contextName)])
        return database.lastInsertRowID
    }

    /// Stores a history transaction's changes. Called once per transaction, before its COMMIT:
    /// the changes are one packed row, not a row each (a 1,000-object save paid more for its
    /// history rows than for its objects).
    func writeHistory(token: Int64, _ changes: HistoryChanges) throws {
        guard !changes.isEmpty else { return }
        try changes.withPackedBytes { bytes in
            try database.cached("UPDATE z_transaction SET changes = ?2 WHERE token = ?1").run(lendingText: bytes, at: 2, [token])
        }
    }


    package var lastToken: Int64 {
        (try? database.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'z_transaction'")?.int64) ?? 0
    }
}

package enum ChangeKind: String, Sendable, Codable { case insert, update, delete }

extension SQLValue {
    package init(_ text: String?) { self = text.map { .text($0) } ?? .null }
}
