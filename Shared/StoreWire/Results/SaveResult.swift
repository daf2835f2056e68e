/// `context.save`'s answer: where each new object went and why, what was written, how
/// conflicts were merged, and the history transaction of each store.
public struct SaveResult: Codable, Sendable, Hashable {
    /// A new object: where it went and why (the reason's detail is in the store-routing log line).
    /// `object.obtainPermanentIDs` answers the same entries.
    public struct Inserted: Codable, Sendable, Hashable {
        public var temporaryID: String
        public var objectID: String
        public var store: String
        public var reason: RoutingReason

        public init(temporaryID: String, objectID: String, store: String, reason: RoutingReason) {
            (self.temporaryID, self.objectID, self.store, self.reason) = (temporaryID, objectID, store, reason)
        }
    }

    /// New objects that went to one store for one reason, in insertion order: `objectIDs[i]` is
    /// the permanent ID of `temporaryIDs[i]` (`context.save` with `report: "grouped"`). For bulk
    /// saves: 2 strings per object instead of an object with 4, which clients parse much faster.
    public struct InsertedGroup: Codable, Sendable, Hashable {
        public var store: String
        public var reason: RoutingReason
        public var temporaryIDs: [String]
        public var objectIDs: [String]

        public init(store: String, reason: RoutingReason, temporaryIDs: [String], objectIDs: [String]) {
            (self.store, self.reason, self.temporaryIDs, self.objectIDs) = (store, reason, temporaryIDs, objectIDs)
        }
    }

    /// An object the merge policy resolved.
    public struct Merged: Codable, Sendable, Hashable {
        public var objectID: String
        public var policy: MergePolicy
        /// Properties written from the context.
        public var written: [String]
        /// The context's edits that were not written (the store's value won, or the row was gone).
        public var dropped: [String]
        public var oldVersion: Int
        /// Absent when the row was gone.
        public var newVersion: Int?

        public init(objectID: String, policy: MergePolicy, written: [String], dropped: [String], oldVersion: Int, newVersion: Int?) {
            (self.objectID, self.policy, self.written, self.dropped) = (objectID, policy, written, dropped)
            (self.oldVersion, self.newVersion) = (oldVersion, newVersion)
        }
    }

    /// The history transaction a save wrote in one store.
    public struct Transaction: Codable, Sendable, Hashable {
        public var store: String
        public var storeUUID: String
        public var token: Int

        public init(store: String, storeUUID: String, token: Int) {
            (self.store, self.storeUUID, self.token) = (store, storeUUID, token)
        }
    }

    /// One entry per new object (`report: "objects"`, the default).
    public var inserted: [Inserted]?
    /// New objects by store and reason (`report: "grouped"`).
    public var insertedGroups: [InsertedGroup]?
    /// Absent with `report: "summary"`.
    public var updated: [String]? = []
    public var deleted: [String]? = []
    public var insertedCount = 0
    public var updatedCount = 0
    public var deletedCount = 0
    public var merged: [Merged] = []
    public var transactions: [Transaction] = []
    /// New shared-store objects outside any share zone: saved, but the cloud mirror cannot
    /// export them (the shared database has no default zone of the user's own).
    public var unexportable: [String]?

    public init() {}

    /// The permanent ID a save gave the object inserted as `temporaryID`.
    public func objectID(for temporaryID: String) -> String? {
        if let entry = inserted?.first(where: { $0.temporaryID == temporaryID }) { return entry.objectID }
        for group in insertedGroups ?? [] {
            if let index = group.temporaryIDs.firstIndex(of: temporaryID) { return group.objectIDs[index] }
        }
        return nil
    }
}
