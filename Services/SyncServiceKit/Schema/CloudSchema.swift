import MeowWire
import SQLiteKit

/// The whole cloud in one SQLite database.
///
/// Every write takes the next value of one container-wide sequence (`meta.seq`): a record's
/// row keeps the sequence of its last write, so "changes since a token" is an index range scan
/// on `(zone, seq)` whose cost depends on the changes, not on the zone's size. Deleted records
/// stay as tombstones (`deleted = 1`) until the retention drops them; the zone's `horizon` then
/// moves past them and older tokens answer changeTokenExpired.
///
/// Both environments live here: a zone, a database change, a field definition and a
/// subscription belong to one (`environment`); records, shares and participants belong to
/// their zone, so they need no column of their own.
enum CloudSchema {
    static let version = 1

    static let statements = """
    CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS users(
        name TEXT PRIMARY KEY, credential TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL DEFAULT 'available', created REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS zones(
        id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, name TEXT NOT NULL,
        created REAL NOT NULL, horizon INTEGER NOT NULL DEFAULT 0,
        environment TEXT NOT NULL DEFAULT 'development', UNIQUE(environment, owner, name));
    CREATE TABLE IF NOT EXISTS records(
        zone INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, fields TEXT,
        tag TEXT NOT NULL, seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
        created REAL NOT NULL, creator TEXT NOT NULL, modified REAL NOT NULL, modifier TEXT NOT NULL,
        parent TEXT, share TEXT, UNIQUE(zone, name));
    CREATE INDEX IF NOT EXISTS records_by_seq ON records(zone, seq);
    CREATE INDEX IF NOT EXISTS records_by_parent ON records(zone, parent) WHERE parent IS NOT NULL;
    CREATE INDEX IF NOT EXISTS tombstones_by_age ON records(zone, modified) WHERE deleted = 1;
    CREATE TABLE IF NOT EXISTS record_versions(
        zone INTEGER NOT NULL, name TEXT NOT NULL, tag TEXT NOT NULL, body TEXT NOT NULL,
        superseded REAL NOT NULL, superseded_seq INTEGER NOT NULL DEFAULT 0, UNIQUE(zone, name, tag));
    CREATE INDEX IF NOT EXISTS record_versions_by_zone_age ON record_versions(zone, superseded);
    CREATE TABLE IF NOT EXISTS shares(
        zone INTEGER NOT NULL, name TEXT NOT NULL, root TEXT,
        public_permission TEXT NOT NULL DEFAULT 'none', PRIMARY KEY(zone, name));
    CREATE TABLE IF NOT EXISTS participants(
        zone INTEGER NOT NULL, share TEXT NOT NULL, user TEXT NOT NULL, role TEXT NOT NULL,
        permission TEXT NOT NULL, acceptance TEXT NOT NULL, PRIMARY KEY(zone, share, user));
    CREATE INDEX IF NOT EXISTS participants_by_user ON participants(user);
    CREATE TABLE IF NOT EXISTS reading_starts(zone INTEGER NOT NULL, user TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY(zone, user));
    CREATE TABLE IF NOT EXISTS database_changes(
        user TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, zone_name TEXT NOT NULL,
        kind TEXT NOT NULL, seq INTEGER NOT NULL, changed REAL NOT NULL,
        environment TEXT NOT NULL DEFAULT 'development',
        PRIMARY KEY(environment, user, scope, owner, zone_name));
    CREATE INDEX IF NOT EXISTS database_changes_by_seq ON database_changes(environment, user, scope, seq);
    CREATE INDEX IF NOT EXISTS zone_removals_by_age ON database_changes(changed) WHERE kind != 'changed';
    CREATE TABLE IF NOT EXISTS field_types(record_type TEXT NOT NULL, field TEXT NOT NULL, type TEXT NOT NULL,
        environment TEXT NOT NULL DEFAULT 'development', PRIMARY KEY(environment, record_type, field));
    CREATE TABLE IF NOT EXISTS subscriptions(environment TEXT NOT NULL, user TEXT NOT NULL, database TEXT NOT NULL, id TEXT NOT NULL,
        body TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY(environment, user, database, id));
    """

    /// Tables a snapshot carries, with their columns, in an order that imports cleanly.
    static let snapshotTables: [(name: String, columns: [String])] = [
        ("users", ["name", "credential", "status", "created"]),
        ("zones", ["id", "owner", "name", "created", "horizon", "environment"]),
        ("records", ["zone", "name", "type", "fields", "tag", "seq", "deleted", "created", "creator",
                     "modified", "modifier", "parent", "share"]),
        ("record_versions", ["zone", "name", "tag", "body", "superseded", "superseded_seq"]),
        ("shares", ["zone", "name", "root", "public_permission"]),
        ("participants", ["zone", "share", "user", "role", "permission", "acceptance"]),
        ("reading_starts", ["zone", "user", "seq"]),
        ("database_changes", ["user", "scope", "owner", "zone_name", "kind", "seq", "changed", "environment"]),
        ("field_types", ["record_type", "field", "type", "environment"]),
        ("subscriptions", ["environment", "user", "database", "id", "body", "created"]),
        ("meta", ["key", "value"]),
    ]

    /// Columns added after a table was first written: a cloud file without one gets it with
    /// its default, and a snapshot's rows may leave it out (they take the default too).
    static let addedColumns: [(table: String, column: String, definition: String, value: JSONValue)] = [
        // The sequence of the write that replaced a kept version (who may see it as an ancestor).
        ("record_versions", "superseded_seq", "INTEGER NOT NULL DEFAULT 0", .int(0)),
        // The environment of a zone, a database change, a field definition: rows written
        // before production existed are development's (`migrateToEnvironments` adds them to a file).
        ("zones", "environment", "TEXT NOT NULL DEFAULT 'development'", .string("development")),
        ("database_changes", "environment", "TEXT NOT NULL DEFAULT 'development'", .string("development")),
        ("field_types", "environment", "TEXT NOT NULL DEFAULT 'development'", .string("development")),
    ]

    static func create(in db: Database) throws {
        try migrateToEnvironments(in: db)
        try addMissingColumns(in: db)
        try migrateRowTables(in: db)
        try db.execute(statements)
        try db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schemaVersion', \(version))")
        try db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('seq', 0)")
        try db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('databaseHorizon', 0)")
    }

    /// Tables whose rows hold a record's fields are rowid tables with a unique key beside them.
    /// They were WITHOUT ROWID tables keyed by record name: there a row of more than about
    /// 1 KB (a CareEvent with its field stamps is 0.9–1.1 KB) spills into an overflow page of its
    /// own, and random names put each insert on a different leaf, so 10,000 records took
    /// 40 MB and a batch of 400 wrote 1.6 MB. Rowid tables keep such rows inline, appended.
    /// A database written in the old layout is copied into the new one, once, in one transaction.
    private static let rowTables: [(name: String, indexes: [String])] = [
        ("records", ["records_by_seq", "records_by_parent", "tombstones_by_age"]),
        ("record_versions", ["record_versions_by_zone_age"]),
    ]

    static func addMissingColumns(in db: Database) throws {
        for added in addedColumns {
            let columns = try db.query("PRAGMA table_info(\(added.table))").compactMap { $0["name"].string }
            guard !columns.isEmpty, !columns.contains(added.column) else { continue }
            try db.execute("ALTER TABLE \(added.table) ADD COLUMN \(added.column) \(added.definition)")
        }
    }

    /// Tables keyed by a user's or a record type's names, which a second environment repeats:
    /// their keys gained `environment`, which a column added in place cannot do, so a file
    /// written before environments existed is copied into the new tables once, in one
    /// transaction, its rows becoming development's.
    private static let environmentTables: [(name: String, indexes: [String])] = [
        ("zones", []), ("database_changes", ["database_changes_by_seq", "zone_removals_by_age"]), ("field_types", []),
    ]

    static func migrateToEnvironments(in db: Database) throws {
        let columns = try db.query("PRAGMA table_info(zones)").compactMap { $0["name"].string }
        guard !columns.isEmpty, !columns.contains("environment") else { return }
        try db.transaction {
            // Zone ids are never reused (a token names its zone by id): the counter moves over.
            let zoneCounter = try db.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'zones'")?.int64 ?? 0
            for table in environmentTables {
                for index in table.indexes { try db.execute("DROP INDEX IF EXISTS \(index)") }
                try db.execute("ALTER TABLE \(table.name) RENAME TO \(table.name)_old")
            }
            try db.execute(statements)
            for table in environmentTables {
                let copied = snapshotTables.first { $0.name == table.name }!.columns.filter { $0 != "environment" }.joined(separator: ", ")
                try db.execute("INSERT INTO \(table.name)(\(copied)) SELECT \(copied) FROM \(table.name)_old")
                try db.execute("DROP TABLE \(table.name)_old")
            }
            try db.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'zones'", [zoneCounter])
            try db.execute("INSERT INTO sqlite_sequence(name, seq) SELECT 'zones', ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'zones')",
                           [zoneCounter])
        }
    }

    static func migrateRowTables(in db: Database) throws {
        for table in rowTables {
            guard let sql = try db.scalar("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table.name])?.string,
                  sql.uppercased().contains("WITHOUT ROWID") else { continue }
            let columns = snapshotTables.first { $0.name == table.name }!.columns.joined(separator: ", ")
            try db.transaction {
                for index in table.indexes { try db.execute("DROP INDEX IF EXISTS \(index)") }
                try db.execute("ALTER TABLE \(table.name) RENAME TO \(table.name)_old")
                try db.execute(statements)
                try db.execute("INSERT INTO \(table.name)(\(columns)) SELECT \(columns) FROM \(table.name)_old")
                try db.execute("DROP TABLE \(table.name)_old")
            }
        }
    }
}
