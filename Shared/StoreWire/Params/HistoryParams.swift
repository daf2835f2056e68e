/// `history.fetch`'s params: transactions after `afterToken` (all when absent), of one store or
/// of every store, at most `limit` (1 to 10000, default 1000) per store.
public struct HistoryFetchParams: Codable, Sendable, Hashable {
    public var store: String?
    public var afterToken: Int?
    public var limit: Int?

    public init(store: String? = nil, afterToken: Int? = nil, limit: Int? = nil) {
        (self.store, self.afterToken, self.limit) = (store, afterToken, limit)
    }
}

/// `history.purge`'s params.
public struct HistoryPurgeParams: Codable, Sendable, Hashable {
    public var store: String
    public var beforeToken: Int

    public init(store: String, beforeToken: Int) {
        self.store = store
        self.beforeToken = beforeToken
    }
}
