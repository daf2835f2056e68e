/// One object of `object.insert`.
public struct InsertItem: Codable, Sendable, Hashable {
    public var entity: String
    public var values: AttributeValues?
    public var store: String?
    /// The stable business id (cloud record name) when it already exists, e.g. on import.
    public var uuid: String?
    /// The cloud zone (import into the shared store) and its owner (default: `__defaultOwner__`).
    public var zone: String?
    public var zoneOwner: String?

    public init(entity: String, values: AttributeValues? = nil, store: String? = nil, uuid: String? = nil,
                zone: String? = nil, zoneOwner: String? = nil) {
        (self.entity, self.values, self.store) = (entity, values, store)
        (self.uuid, self.zone, self.zoneOwner) = (uuid, zone, zoneOwner)
    }
}

/// `object.insert`'s params: one object (`entity` and its keys) or many (`objects`).
public struct InsertParams: Codable, Sendable, Hashable {
    public var context: String
    public var entity: String?
    public var values: AttributeValues?
    public var store: String?
    public var uuid: String?
    public var zone: String?
    public var zoneOwner: String?
    public var objects: [InsertItem]?
    /// false: answer only the count (bulk inserts whose IDs the client does not need).
    public var returnObjectIDs: Bool?

    public init(context: String, entity: String? = nil, values: AttributeValues? = nil, store: String? = nil, uuid: String? = nil,
                zone: String? = nil, zoneOwner: String? = nil, objects: [InsertItem]? = nil, returnObjectIDs: Bool? = nil) {
        (self.context, self.entity, self.values, self.store, self.uuid) = (context, entity, values, store, uuid)
        (self.zone, self.zoneOwner, self.objects, self.returnObjectIDs) = (zone, zoneOwner, objects, returnObjectIDs)
    }
}

/// `object.assign`'s params.
public struct AssignParams: Codable, Sendable, Hashable {
    public var context: String
    public var objectID: String
    public var store: String

    public init(context: String, objectID: String, store: String) {
        (self.context, self.objectID, self.store) = (context, objectID, store)
    }
}

/// `object.set`'s params.
public struct SetParams: Codable, Sendable, Hashable {
    public var context: String
    public var objectID: String
    public var values: AttributeValues

    public init(context: String, objectID: String, values: AttributeValues) {
        (self.context, self.objectID, self.values) = (context, objectID, values)
    }
}

/// The params of ops on one object (`object.get`: context optional; `object.delete`: required).
public struct ObjectParams: Codable, Sendable, Hashable {
    public var context: String?
    public var objectID: String

    public init(context: String? = nil, objectID: String) {
        self.context = context
        self.objectID = objectID
    }
}

/// `object.obtainPermanentIDs`' params.
public struct ObtainParams: Codable, Sendable, Hashable {
    public var context: String
    public var objectIDs: [String]

    public init(context: String, objectIDs: [String]) {
        self.context = context
        self.objectIDs = objectIDs
    }
}

/// `object.moveToStore`'s params: `values` are set on the copy.
public struct MoveParams: Codable, Sendable, Hashable {
    public var context: String
    public var objectID: String
    public var store: String
    public var values: AttributeValues?

    public init(context: String, objectID: String, store: String, values: AttributeValues? = nil) {
        (self.context, self.objectID, self.store, self.values) = (context, objectID, store, values)
    }
}
