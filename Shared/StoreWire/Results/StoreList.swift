/// One loaded store (`store.list`, `info.stores`).
public struct StoreDescription: Codable, Sendable, Hashable {
    /// The configuration name (`Private`, `Shared`).
    public var name: String
    public var scope: StoreScope
    public var url: String
    public var storeUUID: String
    /// The file; absent for an in-memory store.
    public var path: String?
    public var entities: [String]
    public var lastHistoryToken: Int

    public init(name: String, scope: StoreScope, url: String, storeUUID: String, path: String?, entities: [String], lastHistoryToken: Int) {
        (self.name, self.scope, self.url, self.storeUUID) = (name, scope, url, storeUUID)
        (self.path, self.entities, self.lastHistoryToken) = (path, entities, lastHistoryToken)
    }
}

/// `store.list`'s answer: the stores in load order and the routing mode.
public struct StoreListResult: Codable, Sendable, Hashable {
    public var stores: [StoreDescription]
    public var routing: RoutingMode

    public init(stores: [StoreDescription], routing: RoutingMode) {
        self.stores = stores
        self.routing = routing
    }
}
