import MeowWire

/// An object as a store-service shows it (`object.get`, `object.set`, `fetch`).
public struct ManagedObject: Sendable, Codable, Hashable {
    /// A Core Data URI: `x-coredata:///Entity/t…` until saved, then `x-coredata://<store>/Entity/p<n>`.
    public var objectID: String
    public var entity: String
    /// The store's configuration name (`Private`, `Shared`); nil for a new object not yet routed.
    public var store: String?
    /// The optimistic-locking version (0 for an unsaved object).
    public var version: Int
    /// The business id, which is the cloud record's name.
    public var uuid: String
    /// The cloud zone of a shared-store object, and its owner's user name.
    public var zone: String?
    public var zoneOwner: String?
    /// Attributes and to-one relationships (object-ID strings); a many-to-many relationship's
    /// targets as an array of object IDs.
    public var values: [String: JSONValue]
    /// Present only when the object is seen through a context.
    public var isInserted: Bool?
    public var isDeleted: Bool?
    public var hasChanges: Bool?

    public init(objectID: String, entity: String, store: String?, version: Int, uuid: String, zone: String?, zoneOwner: String?,
                values: [String: JSONValue], isInserted: Bool? = nil, isDeleted: Bool? = nil, hasChanges: Bool? = nil) {
        self.objectID = objectID
        self.entity = entity
        self.store = store
        self.version = version
        self.uuid = uuid
        self.zone = zone
        self.zoneOwner = zoneOwner
        self.values = values
        self.isInserted = isInserted
        self.isDeleted = isDeleted
        self.hasChanges = hasChanges
    }

    /// A value by attribute name: `session["title"]`.
    public subscript(key: String) -> JSONValue? { values[key] }

    enum CodingKeys: String, CodingKey {
        case objectID, entity, store, version, uuid, zone, zoneOwner, values, isInserted, isDeleted, hasChanges
    }

    private struct ValueKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// `store` and `zone` are written as null when unset, `zoneOwner` and the context flags only
    /// when set. Values are written as JSON primitives directly: going through JSONValue's own
    /// encode costs a nested encoder per value, which a fetch of thousands of objects would feel.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(objectID, forKey: .objectID)
        try container.encode(entity, forKey: .entity)
        try container.encode(store, forKey: .store)
        try container.encode(version, forKey: .version)
        try container.encode(uuid, forKey: .uuid)
        try container.encode(zone, forKey: .zone)
        try container.encodeIfPresent(zoneOwner, forKey: .zoneOwner)
        var nested = container.nestedContainer(keyedBy: ValueKey.self, forKey: .values)
        for (name, value) in values {
            let key = ValueKey(stringValue: name)
            switch value {
            case .null: try nested.encodeNil(forKey: key)
            case let .string(text): try nested.encode(text, forKey: key)
            case let .int(number): try nested.encode(number, forKey: key)
            case let .double(number): try nested.encode(number, forKey: key)
            case let .bool(flag): try nested.encode(flag, forKey: key)
            case .array, .object: try nested.encode(value, forKey: key)
            }
        }
        try container.encodeIfPresent(isInserted, forKey: .isInserted)
        try container.encodeIfPresent(isDeleted, forKey: .isDeleted)
        try container.encodeIfPresent(hasChanges, forKey: .hasChanges)
    }
}
