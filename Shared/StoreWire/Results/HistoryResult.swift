import MeowWire

/// `history.fetch`'s answer: persistent history transactions (NSPersistentHistoryTransaction)
/// per store, oldest first, and the newest token of each store.
public struct HistoryResult: Codable, Sendable, Hashable {
    /// One change of a transaction.
    public struct Change: Codable, Sendable, Hashable {
        /// `insert`, `update` or `delete`.
        public var kind: String
        public var objectID: String
        public var entity: String
        public var uuid: String
        /// Insert: the properties set; update: the properties changed.
        public var changedProperties: [String]?
        /// Delete: the uuid, zone and zone owner, and the attributes marked preservesValueInHistoryOnDeletion.
        public var tombstone: [String: JSONValue]?

        public init(kind: String, objectID: String, entity: String, uuid: String, changedProperties: [String]?, tombstone: [String: JSONValue]?) {
            (self.kind, self.objectID, self.entity, self.uuid) = (kind, objectID, entity, uuid)
            (self.changedProperties, self.tombstone) = (changedProperties, tombstone)
        }
    }

    /// One save's transaction in one store, with a token that only grows.
    public struct Transaction: Codable, Sendable, Hashable {
        public var store: String
        public var storeUUID: String
        public var token: Int
        public var timestamp: String
        public var author: String
        public var contextName: String?
        public var changes: [Change]

        public init(store: String, storeUUID: String, token: Int, timestamp: String, author: String, contextName: String?, changes: [Change]) {
            (self.store, self.storeUUID, self.token, self.timestamp) = (store, storeUUID, token, timestamp)
            (self.author, self.contextName, self.changes) = (author, contextName, changes)
        }
    }

    public var transactions: [Transaction]
    /// The newest token per store (what to pass as afterToken next time).
    public var lastTokens: [String: Int]

    public init(transactions: [Transaction] = [], lastTokens: [String: Int] = [:]) {
        self.transactions = transactions
        self.lastTokens = lastTokens
    }
}

/// `history.purge`'s answer.
public struct HistoryPurgeResult: Codable, Sendable, Hashable {
    public var store: String
    public var purgedTransactions: Int

    public init(store: String, purgedTransactions: Int) {
        self.store = store
        self.purgedTransactions = purgedTransactions
    }
}
