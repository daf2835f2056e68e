/// `repair.orphans`' answer: what an orphan repair did.
public struct OrphanRepairReport: Codable, Sendable, Hashable {
    /// An orphan left as it was, and why (it is in another store than the default parent).
    public struct Skipped: Codable, Sendable, Hashable {
        public var objectID: String
        public var store: String
        public var reason: String

        public init(objectID: String, store: String, reason: String) {
            (self.objectID, self.store, self.reason) = (objectID, store, reason)
        }
    }
    /// The default parent (MeowCare: the default CareSession).
    public var session: String
    public var sessionCreated: Bool
    public var attached: Int
    /// The attached objects (at most 1000 listed; `truncated` says when more were attached).
    public var attachedObjectIDs: [String]
    /// Unsaved orphans that had no store and were assigned to the session's store first.
    public var assigned: [String]
    public var skipped: [Skipped]
    public var skippedCount: Int
    public var truncated: Bool

    public init(session: String, sessionCreated: Bool, attached: Int, attachedObjectIDs: [String], assigned: [String],
                skipped: [Skipped], skippedCount: Int, truncated: Bool) {
        (self.session, self.sessionCreated, self.attached, self.attachedObjectIDs) = (session, sessionCreated, attached, attachedObjectIDs)
        (self.assigned, self.skipped, self.skippedCount, self.truncated) = (assigned, skipped, skippedCount, truncated)
    }
}
