import CloudWire

/// The permission the shared store keeps for one cloud zone (`share.list`): what the
/// permission predicates (`permission.check`, a save's check) read.
public struct ShareMetadata: Codable, Sendable, Hashable {
    public var zoneName: String
    public var ownerName: String
    public var permission: SharePermission

    public init(zoneName: String, ownerName: String, permission: SharePermission) {
        (self.zoneName, self.ownerName, self.permission) = (zoneName, ownerName, permission)
    }
}

/// `share.list`'s answer: the shared store's metadata, by zone name.
public struct ShareListResult: Codable, Sendable, Hashable {
    public var shares: [ShareMetadata]

    public init(shares: [ShareMetadata]) { self.shares = shares }
}

/// `share.setMetadata`'s params: a zone's permission, and saved shared-store objects to put in
/// that zone (a device without a mirror stands in for the mirror's imports this way).
public struct ShareMetadataParams: Codable, Sendable, Hashable {
    public var zoneName: String
    /// The zone's owner; the default owner when absent.
    public var ownerName: String?
    public var permission: SharePermission
    public var objectIDs: [String]?

    public init(zoneName: String, ownerName: String? = nil, permission: SharePermission, objectIDs: [String]? = nil) {
        (self.zoneName, self.ownerName, self.permission, self.objectIDs) = (zoneName, ownerName, permission, objectIDs)
    }
}

/// `share.setMetadata`'s answer.
public struct ShareMetadataResult: Codable, Sendable, Hashable {
    public var zoneName: String
    public var permission: SharePermission
    /// Objects moved into the zone (`objectIDs`).
    public var zonedObjects: Int

    public init(zoneName: String, permission: SharePermission, zonedObjects: Int) {
        (self.zoneName, self.permission, self.zonedObjects) = (zoneName, permission, zonedObjects)
    }
}
