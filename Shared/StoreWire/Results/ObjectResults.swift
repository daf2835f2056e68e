/// `object.insert`'s answer: one object's temporary ID (`objectID`), or many (`objectIDs`, in
/// the order of the request's `objects`; absent with `returnObjectIDs: false`).
public struct InsertResult: Codable, Sendable, Hashable {
    public var objectID: String?
    public var objectIDs: [String]?
    public var insertedCount: Int

    public init(objectID: String? = nil, objectIDs: [String]? = nil, insertedCount: Int) {
        (self.objectID, self.objectIDs, self.insertedCount) = (objectID, objectIDs, insertedCount)
    }
}

/// `object.assign`'s answer.
public struct AssignResult: Codable, Sendable, Hashable {
    public var objectID: String
    public var store: String

    public init(objectID: String, store: String) {
        self.objectID = objectID
        self.store = store
    }
}

/// `object.delete`'s answer.
public struct DeleteResult: Codable, Sendable, Hashable {
    public var objectID: String
    public var isDeleted: Bool

    public init(objectID: String, isDeleted: Bool) {
        self.objectID = objectID
        self.isDeleted = isDeleted
    }
}

/// `object.obtainPermanentIDs`' answer: each object routed now, as a save reports it.
public struct ObtainResult: Codable, Sendable, Hashable {
    public var objects: [SaveResult.Inserted]

    public init(objects: [SaveResult.Inserted] = []) { self.objects = objects }
}

/// `object.moveToStore`'s answer: the copy's temporary ID, and the saved object deleted at the next save.
public struct MoveResult: Codable, Sendable, Hashable {
    public var objectID: String
    public var deletedObjectID: String
    public var store: String

    public init(objectID: String, deletedObjectID: String, store: String) {
        (self.objectID, self.deletedObjectID, self.store) = (objectID, deletedObjectID, store)
    }
}

/// `permission.check`'s answer: NSPersistentCloudKitContainer's canModifyManagedObjects per
/// store, and canUpdateRecord/canDeleteRecord per object asked about.
public struct PermissionResult: Codable, Sendable, Hashable {
    public struct Entry: Codable, Sendable, Hashable {
        public var objectID: String
        public var canUpdateRecord: Bool
        public var canDeleteRecord: Bool

        public init(objectID: String, canUpdateRecord: Bool, canDeleteRecord: Bool) {
            (self.objectID, self.canUpdateRecord, self.canDeleteRecord) = (objectID, canUpdateRecord, canDeleteRecord)
        }
    }

    public var canModifyManagedObjects: [String: Bool]
    public var objects: [Entry]

    public init(canModifyManagedObjects: [String: Bool] = [:], objects: [Entry] = []) {
        self.canModifyManagedObjects = canModifyManagedObjects
        self.objects = objects
    }
}
