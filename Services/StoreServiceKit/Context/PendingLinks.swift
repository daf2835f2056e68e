import FoundationEssentials
import MeowWire
import SQLiteKit

/// Relationships of imported objects whose destination record has not arrived yet, kept per
/// store until it does (NSPersistentCloudKitContainer keeps such a relationship across fetches
/// and launches, and links it when its destination is imported). Records come in any order: an
/// event's page can come before its session's, or its session's zone can be fetched later. The
/// object's relationship stays empty meanwhile, and the orphan repair leaves it alone: it is
/// not an orphan, it is waiting.
package struct PendingLinks {
    package static let table = "mirror_pending_links"
    let database: Database

    package init(database: Database) { self.database = database }

    /// One relationship waiting for its destination.
    package struct Link: Codable, Sendable, Equatable {
        package var recordName: String
        package var entity: String
        package var relationship: String
        package var target: String
        /// The source's zone (`owner/zoneName`), when known.
        package var zone: String?
        /// When the link was first found waiting for this target (seconds since 1970).
        package var since: Double

        package init(recordName: String, entity: String, relationship: String, target: String, zone: String?, since: Double) {
            (self.recordName, self.entity, self.relationship, self.target, self.zone, self.since) = (recordName, entity, relationship, target, zone, since)
        }
    }

    static func createTable(in database: Database) throws {
        try database.execute("""
            CREATE TABLE IF NOT EXISTS \(table)(source TEXT NOT NULL, entity TEXT NOT NULL, relationship TEXT NOT NULL, target TEXT NOT NULL,
                zone TEXT, since REAL NOT NULL, PRIMARY KEY(source, relationship));
            CREATE INDEX IF NOT EXISTS \(table)_target ON \(table)(target);
            """)
    }

    package var isEmpty: Bool {
        get throws {
            guard try database.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [Self.table]) != nil else { return true }
            return try database.scalar("SELECT 1 FROM \(Self.table) LIMIT 1") == nil
        }
    }

    /// Replaces what is kept for the records `sources` by `links` (a record applied again names
    /// its destinations anew). A link already waiting for the same target keeps its `since`.
    package func replace(sources: [String], with links: [Link]) throws {
        if !sources.isEmpty, try !isEmpty {
            try database.execute("DELETE FROM \(Self.table) WHERE source IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM json_each(?) k WHERE k.value ->> 0 = source AND k.value ->> 1 = relationship AND k.value ->> 2 = target)",
                                 [JSONWriter.text(strings: sources), Self.keys(links)])
        }
        for link in links { try keep(link) }
    }

    func keep(_ link: Link) throws {
        try database.execute("""
            INSERT INTO \(Self.table)(source, entity, relationship, target, zone, since) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(source, relationship) DO UPDATE SET entity = excluded.entity, zone = excluded.zone,
                since = iif(target = excluded.target, since, excluded.since), target = excluded.target
            """, [link.recordName, link.entity, link.relationship, link.target, SQLValue(link.zone), link.since])
    }

    /// The links waiting for any of `targets`.
    package func waiting(for targets: [String]) throws -> [Link] {
        guard !targets.isEmpty, try !isEmpty else { return [] }
        return try database.query("SELECT \(Self.columns) FROM \(Self.table) WHERE target IN (SELECT value FROM json_each(?)) ORDER BY rowid",
                                  [JSONWriter.text(strings: targets)]).map(Self.link)
    }

    /// The links the record `source` waits with.
    package func links(from source: String) throws -> [Link] {
        guard try !isEmpty else { return [] }
        return try database.query("SELECT \(Self.columns) FROM \(Self.table) WHERE source = ? ORDER BY relationship", [source]).map(Self.link)
    }

    /// Forgets `link` if it still waits for the same target.
    package func forget(_ link: Link) throws {
        guard try !isEmpty else { return }
        try database.execute("DELETE FROM \(Self.table) WHERE source = ? AND relationship = ? AND target = ?",
                             [link.recordName, link.relationship, link.target])
    }

    package func all() throws -> [Link] {
        guard try !isEmpty else { return [] }
        return try database.query("SELECT \(Self.columns) FROM \(Self.table) ORDER BY since, source").map(Self.link)
    }

    /// Forgets the links of a zone's records (the zone left this device).
    package func drop(zone: String) throws {
        guard try !isEmpty else { return }
        try database.execute("DELETE FROM \(Self.table) WHERE zone = ?", [zone])
    }

    func dropAll() throws {
        guard try !isEmpty else { return }
        try database.execute("DELETE FROM \(Self.table)")
    }

    /// A condition on rows of `table` (an entity's) that holds unless the row's `relationship`
    /// waits for its destination: the orphan repair's rows are those with the relationship
    /// empty *and* nothing pending. With nothing pending at all (the usual case) the condition is
    /// `1`, so a scan of many orphans runs no subquery per row; callers use it in the same
    /// operation, with the store held, so the table cannot fill in between.
    static func notWaiting(table: String, relationship: String, in database: Database) throws -> String {
        guard try !PendingLinks(database: database).isEmpty else { return "1" }
        return "NOT EXISTS (SELECT 1 FROM \(Self.table) l WHERE l.source = \(table).z_uuid AND l.relationship = '\(relationship.replacingOccurrences(of: "'", with: "''"))')"
    }

    private static let columns = "source, entity, relationship, target, zone, since"

    private static func link(_ row: Row) -> Link {
        Link(recordName: row[0].string ?? "", entity: row[1].string ?? "", relationship: row[2].string ?? "", target: row[3].string ?? "",
             zone: row[4].string, since: row[5].double ?? 0)
    }

    private static func keys(_ links: [Link]) -> String {
        var text = "["
        for (index, link) in links.enumerated() {
            if index > 0 { text += "," }
            text += "["
            JSONWriter.appendString(link.recordName, to: &text)
            text += ","
            JSONWriter.appendString(link.relationship, to: &text)
            text += ","
            JSONWriter.appendString(link.target, to: &text)
            text += "]"
        }
        return text + "]"
    }
}
