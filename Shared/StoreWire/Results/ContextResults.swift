/// `context.open`'s answer.
public struct ContextOpenResult: Codable, Sendable, Hashable {
    /// The context's name on the wire (`c1`), which later ops pass as `context`.
    public var context: String
    public var name: String?
    public var author: String
    public var mergePolicy: MergePolicy

    public init(context: String, name: String?, author: String, mergePolicy: MergePolicy) {
        (self.context, self.name, self.author, self.mergePolicy) = (context, name, author, mergePolicy)
    }
}

/// `context.rollback` and `context.reset`'s answer.
public struct ContextStateResult: Codable, Sendable, Hashable {
    public var context: String
    public var registeredObjects: Int

    public init(context: String, registeredObjects: Int) {
        self.context = context
        self.registeredObjects = registeredObjects
    }
}

/// `context.close`'s answer.
public struct ClosedResult: Codable, Sendable, Hashable {
    public var closed: Bool

    public init(closed: Bool) { self.closed = closed }
}

/// `context.refresh`'s answer: objects re-read, and objects forgotten because their rows are gone.
public struct RefreshResult: Codable, Sendable, Hashable {
    public var refreshed: Int
    public var forgotten: Int

    public init(refreshed: Int, forgotten: Int) {
        self.refreshed = refreshed
        self.forgotten = forgotten
    }
}
