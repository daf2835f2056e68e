import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// Persistent history (NSPersistentHistoryTransaction): per store, every save's transaction
/// with a monotonic token, its author and context name, and its changes.
public struct HistoryTransaction: Codable, Sendable {
    public struct Change: Codable, Sendable {
        public var kind: String
        public var objectID: String
        public var entity: String
        public var uuid: String
        /// Insert: the properties set; update: the properties changed.
        public var changedProperties: [String]?
        /// Delete: the uuid, zone and the attributes marked preservesValueInHistoryOnDeletion.
        public var tombstone: [String: JSONValue]?
    }
    public var store: String
    public var storeUUID: String
    public var token: Int
    public var timestamp: String
    public var author: String
    public var contextName: String?
    public var changes: [Change]
}

enum PersistentHistory {
    /// Transactions after `afterToken` (all when nil), oldest first, at most `limit`.
    static func fetch(_ store: PersistentStore, afterToken: Int?, limit: Int) throws -> [HistoryTransaction] {
        let rows = try store.database.query(
            "SELECT token, timestamp, author, context_name FROM z_transaction WHERE token > ? ORDER BY token LIMIT ?",
            [afterToken ?? 0, limit])
        guard let first = rows.first?[0].int64, let last = rows.last?[0].int64 else { return [] }
        var changes: [Int64: [HistoryTransaction.Change]] = [:]
        let statement = try store.database.cached("SELECT token, kind, entity, pk, uuid, changed, tombstone FROM z_change WHERE token BETWEEN ? AND ? ORDER BY id")
        let decoder = JSONDecoder()
        try statement.forEach([first, last]) { row in
            let entity = row.string(at: 2) ?? ""
            let changed = try row.string(at: 5).map { try decoder.decode([String].self, from: Data($0.utf8)) }
            let tombstone = try row.string(at: 6).map { try decoder.decode([String: JSONValue].self, from: Data($0.utf8)) }
            changes[row.int64(at: 0), default: []].append(.init(
                kind: row.string(at: 1) ?? "", objectID: store.objectID(entity, row.int64(at: 3)).uri, entity: entity,
                uuid: row.string(at: 4) ?? "", changedProperties: changed, tombstone: tombstone))
        }
        return rows.map { row in
            let token = row[0].int64 ?? 0
            return HistoryTransaction(store: store.name, storeUUID: store.uuid, token: Int(token), timestamp: row[1].string ?? "",
                                      author: row[2].string ?? "", contextName: row[3].string, changes: changes[token] ?? [])
        }
    }

    /// Deletes transactions before `beforeToken`; returns how many went. Tokens never repeat.
    static func purge(_ store: PersistentStore, beforeToken: Int) throws -> Int {
        try store.database.transaction {
            try store.database.execute("DELETE FROM z_change WHERE token < ?", [beforeToken])
            try store.database.execute("DELETE FROM z_transaction WHERE token < ?", [beforeToken])
            return store.database.changes
        }
    }
}
