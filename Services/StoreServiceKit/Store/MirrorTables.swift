import SQLiteKit

/// The mirror's tables in a store's SQLite file (`MirrorBookkeeping` reads and writes them).
/// They are part of the store file's format, so the store's own code that copies or upgrades a
/// file (device snapshots) makes them without the mirror, and every upgrade of an older file's
/// tables happens here, in one place.
package enum MirrorTables {
    package static func create(in database: Database) throws {
        // Without any mirror table yet, the tables made here have no older layout to upgrade:
        // the probes for one are skipped.
        let fresh = try database.scalar(#"SELECT 1 FROM sqlite_master WHERE name LIKE 'mirror\_%' ESCAPE '\' LIMIT 1"#) == nil
        try database.execute("""
            CREATE TABLE IF NOT EXISTS mirror_kv(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_pending(seq INTEGER PRIMARY KEY AUTOINCREMENT, uuid TEXT NOT NULL UNIQUE,
                entity TEXT NOT NULL, kind TEXT NOT NULL, zone_name TEXT, owner_name TEXT, changed TEXT NOT NULL,
                not_before REAL NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0, times TEXT, pk INTEGER);
            CREATE TABLE IF NOT EXISTS mirror_meta(uuid TEXT PRIMARY KEY, entity TEXT NOT NULL, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, change_tag TEXT, server_fields TEXT);
            CREATE TABLE IF NOT EXISTS mirror_fieldtimes(uuid TEXT PRIMARY KEY, times TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_unexportable(uuid TEXT PRIMARY KEY, object_id TEXT NOT NULL, zone TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_unimportable(uuid TEXT NOT NULL, entity TEXT NOT NULL, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, change_tag TEXT, code TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY(uuid, zone_name, owner_name));
            CREATE TABLE IF NOT EXISTS mirror_share(zone_name TEXT PRIMARY KEY, root_uuid TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_deleted(uuid TEXT PRIMARY KEY, zone_name TEXT NOT NULL, owner_name TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_inflight(id INTEGER PRIMARY KEY AUTOINCREMENT, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, names TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS mirror_tombstones(uuid TEXT NOT NULL, record_type TEXT NOT NULL, zone_name TEXT NOT NULL,
                owner_name TEXT NOT NULL, PRIMARY KEY(uuid, zone_name, owner_name));
            """)
        try PendingLinks.createTable(in: database)
        if !fresh { try upgrade(database) }
    }

    /// Brings the tables of a file written by an earlier version to today's layout.
    private static func upgrade(_ database: Database) throws {
        // No index on a record's zone: every record synced writes a metadata row (the sending
        // device's verdict, the receiving device's page), and the index was a fifth of that
        // row's cost (~3 µs), paid to speed up what runs once per zone lifetime: a zone's
        // deletion, purge or reset, and a first fetch of a zone (a scan of the table then).
        try database.execute("DROP INDEX IF EXISTS mirror_meta_zone")
        // Refusals kept before a record was named by its zone too (one per record name): another
        // owner's record of the same name is another record, refused or not on its own.
        if try database.scalar("SELECT count(*) FROM pragma_table_info('mirror_unimportable') WHERE pk > 0")?.int ?? 0 < 2 {
            try database.execute("""
                CREATE TABLE mirror_unimportable_keyed(uuid TEXT NOT NULL, entity TEXT NOT NULL, zone_name TEXT NOT NULL,
                    owner_name TEXT NOT NULL, change_tag TEXT, code TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY(uuid, zone_name, owner_name));
                INSERT INTO mirror_unimportable_keyed SELECT uuid, entity, zone_name, owner_name, change_tag, code, message FROM mirror_unimportable;
                DROP TABLE mirror_unimportable;
                ALTER TABLE mirror_unimportable_keyed RENAME TO mirror_unimportable;
                """)
        }
        // Queues written before entries carried a new object's stamps and its row's key.
        if try database.scalar("SELECT 1 FROM pragma_table_info('mirror_pending') WHERE name = 'pk'") == nil {
            try database.execute("ALTER TABLE mirror_pending ADD COLUMN times TEXT; ALTER TABLE mirror_pending ADD COLUMN pk INTEGER")
        }
        // Stores written before field times were one row per record kept a row per field.
        if try database.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'mirror_fieldtime'") != nil {
            try database.execute("""
                INSERT OR REPLACE INTO mirror_fieldtimes(uuid, times)
                    SELECT uuid, json_group_object(field, json_object('device', device, 'time', time)) FROM mirror_fieldtime GROUP BY uuid;
                DROP TABLE mirror_fieldtime;
                """)
        }
    }
}
