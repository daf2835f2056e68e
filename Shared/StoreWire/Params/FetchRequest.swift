import MeowWire

/// A fetch: entity, optional predicate and sort, limit/offset, and the stores to search
/// (Core Data's affectedStores; both when absent).
public struct FetchRequest: Codable, Sendable, Hashable {
    public struct SortDescriptor: Codable, Sendable, Hashable {
        public var key: String
        public var ascending: Bool?

        public init(key: String, ascending: Bool? = nil) {
            self.key = key
            self.ascending = ascending
        }
    }
    public var entity: String
    public var predicate: String?
    public var arguments: [JSONValue]?
    public var sortDescriptors: [SortDescriptor]?
    public var limit: Int?
    public var offset: Int?
    public var stores: [String]?
    /// Registers the results in this context (so later edits are checked against what was read).
    public var context: String?
    /// `objects` (default) or `rows`: one array per object under `columns` (stored values),
    /// which is much cheaper to encode and parse for big fetches.
    public var resultFormat: FetchResultFormat?

    public init(entity: String, predicate: String? = nil, arguments: [JSONValue]? = nil, sortDescriptors: [SortDescriptor]? = nil,
                limit: Int? = nil, offset: Int? = nil, stores: [String]? = nil, context: String? = nil, resultFormat: FetchResultFormat? = nil) {
        (self.entity, self.predicate, self.arguments, self.sortDescriptors) = (entity, predicate, arguments, sortDescriptors)
        (self.limit, self.offset, self.stores, self.context, self.resultFormat) = (limit, offset, stores, context, resultFormat)
    }
}

/// How a fetch answers: objects as `ManagedObject`s, or `rows` of stored values under `columns`.
public enum FetchResultFormat: String, Codable, Sendable, Hashable, CaseIterable {
    case objects, rows
}
