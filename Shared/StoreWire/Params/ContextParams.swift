/// `context.open`'s params; every one is optional (author `app`, merge policy `error`).
public struct ContextOpenParams: Codable, Sendable, Hashable {
    public var name: String?
    public var author: String?
    public var mergePolicy: MergePolicy?

    public init(name: String? = nil, author: String? = nil, mergePolicy: MergePolicy? = nil) {
        (self.name, self.author, self.mergePolicy) = (name, author, mergePolicy)
    }
}

/// The params of ops on one context (`context.rollback`, `reset`, `close`).
public struct ContextParams: Codable, Sendable, Hashable {
    public var context: String

    public init(context: String) { self.context = context }
}

/// `context.save`'s params.
public struct SaveParams: Codable, Sendable, Hashable {
    public var context: String
    public var report: SaveReport?

    public init(context: String, report: SaveReport? = nil) {
        self.context = context
        self.report = report
    }
}

/// `context.refresh`'s params: the objects to re-read (all registered ones when absent).
public struct RefreshParams: Codable, Sendable, Hashable {
    public var context: String
    public var objectIDs: [String]?

    public init(context: String, objectIDs: [String]? = nil) {
        self.context = context
        self.objectIDs = objectIDs
    }
}

/// `repair.orphans`' params: in a context (the client saves), or in the stores when absent.
public struct RepairParams: Codable, Sendable, Hashable {
    public var context: String?

    public init(context: String? = nil) { self.context = context }
}

/// `permission.check`'s params.
public struct PermissionParams: Codable, Sendable, Hashable {
    public var context: String?
    public var objectIDs: [String]?

    public init(context: String? = nil, objectIDs: [String]? = nil) {
        self.context = context
        self.objectIDs = objectIDs
    }
}
