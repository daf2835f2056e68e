/// An object as a store-service shows it (`ObjectRecord`: object.get, object.set, fetch).
public struct ManagedObject: Decodable, Sendable, Hashable {
    /// A Core Data URI: `x-coredata:///Entity/t…` until saved, then `x-coredata://<store>/Entity/p<n>`.
    public var objectID: String
    public var entity: String
    /// The store's configuration name (`Private`, `Shared`); nil for a new object not yet routed.
    public var store: String?
    /// The optimistic-locking version (0 for an unsaved object).
    public var version: Int
    /// The business id, which is the cloud record's name.
    public var uuid: String
    /// The cloud zone of a shared-store object, and its owner.
    public var zone: String?
    public var zoneOwner: String?
    /// Attributes and to-one relationships (object-ID strings).
    public var values: [String: JSONValue]
    /// Present only when the object is seen through a context.
    public var isInserted: Bool?
    public var isDeleted: Bool?
    public var hasChanges: Bool?

    /// A value by attribute name: `session["title"]`.
    public subscript(key: String) -> JSONValue? { values[key] }
}

/// `context.save`'s answer.
public struct SaveResult: Decodable, Sendable {
    /// A new object: where it went and why (`privateStoreDefault`, `relatedObject`, `assigned`, …).
    public struct Inserted: Decodable, Sendable, Hashable {
        public var temporaryID: String
        public var objectID: String
        public var store: String
        public var reason: String
    }

    /// An object the merge policy resolved.
    public struct Merged: Decodable, Sendable, Hashable {
        public var objectID: String
        public var policy: String
        public var written: [String]
        public var dropped: [String]
    }

    public struct Transaction: Decodable, Sendable, Hashable {
        public var store: String
        public var storeUUID: String
        public var token: Int
    }

    public var inserted: [Inserted]?
    public var updated: [String]?
    public var deleted: [String]?
    public var insertedCount: Int
    public var updatedCount: Int
    public var deletedCount: Int
    public var merged: [Merged]?
    public var transactions: [Transaction]?
    /// New shared-store objects outside any share zone, which the mirror cannot export (seed 002).
    public var unexportable: [String]?

    /// The permanent ID a save gave the object inserted as `temporaryID`.
    public func objectID(for temporaryID: String) -> String? {
        inserted?.first { $0.temporaryID == temporaryID }?.objectID
    }
}

/// A sort key of a fetch.
public struct FetchSort: Sendable, Hashable {
    public var key: String
    public var ascending: Bool
    public static func ascending(_ key: String) -> FetchSort { FetchSort(key: key, ascending: true) }
    public static func descending(_ key: String) -> FetchSort { FetchSort(key: key, ascending: false) }
    var json: JSONValue { ["key": .string(key), "ascending": .bool(ascending)] }
}

/// `history.fetch`'s answer: persistent history transactions per store.
public struct HistoryResult: Decodable, Sendable {
    public struct Change: Decodable, Sendable, Hashable {
        /// `insert`, `update` or `delete`.
        public var kind: String
        public var objectID: String
        public var entity: String
        public var uuid: String?
        public var changedProperties: [String]?
        /// A delete's preserved values.
        public var tombstone: [String: JSONValue]?
    }

    public struct Transaction: Decodable, Sendable, Hashable {
        public var store: String
        public var storeUUID: String
        public var token: Int
        public var timestamp: String
        public var author: String
        public var contextName: String?
        public var changes: [Change]
    }

    public var transactions: [Transaction]
    public var lastTokens: [String: Int]
}

/// One store of `store.list`.
public struct StoreDescription: Decodable, Sendable, Hashable {
    public var name: String
    /// `private` or `shared`.
    public var scope: String
    public var url: String
    public var storeUUID: String
    public var path: String?
    public var entities: [String]
    public var lastHistoryToken: Int
}

/// The share metadata the shared store keeps per cloud zone (`share.list`).
public struct ShareMetadata: Decodable, Sendable, Hashable {
    public var zoneName: String
    public var ownerName: String
    /// `none`, `readOnly` or `readWrite`.
    public var permission: String
}

/// The cloud's clock (`admin.setClock`): it stands still once set.
public struct ClockState: Decodable, Sendable, Hashable {
    /// Seconds since 1970.
    public var now: Double
    /// Whether the clock is set (true) or follows the system's (false).
    public var fixed: Bool
}

/// A device's clock (`clock.set`): once set it keeps running from its new reading, as a device's does.
public struct DeviceClockState: Decodable, Sendable, Hashable {
    /// Seconds since 1970, as the device reads its clock now.
    public var now: Double
    /// How far it is set from the system's clock (0: not set).
    public var offsetSeconds: Double
}
