import MeowWire

/// zones.save, zones.fetch and zones.delete.
public struct ZonesParams: Codable, Sendable {
    public var database: DatabaseScope
    public var zoneIDs: [ZoneID]?
    /// zones.delete only: report the zones as purged (the owner's devices must not re-upload).
    public var purge: Bool?
    public init(database: DatabaseScope, zoneIDs: [ZoneID]? = nil, purge: Bool? = nil) {
        self.database = database
        self.zoneIDs = zoneIDs
        self.purge = purge
    }
}

public struct ZoneInfo: Codable, Sendable, Hashable {
    public var zoneID: ZoneID
    /// "atomic" and "fetchChanges" for custom zones, "sharing" for zones that can hold shares.
    public var capabilities: [String]
    /// The zone-wide share's record name when the zone has one.
    public var zoneShare: String?

    public init(zoneID: ZoneID, capabilities: [String], zoneShare: String? = nil) {
        self.zoneID = zoneID
        self.capabilities = capabilities
        self.zoneShare = zoneShare
    }
}

public struct ZonesResult: Codable, Sendable {
    public var zones: [ZoneInfo]
    public var deleted: [ZoneID]?

    public init(zones: [ZoneInfo], deleted: [ZoneID]? = nil) {
        self.zones = zones
        self.deleted = deleted
    }
}
