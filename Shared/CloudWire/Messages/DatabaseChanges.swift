import MeowWire

/// changes.fetchDatabase: the zones changed, deleted, purged or reset since a token.
public struct FetchDatabaseChangesParams: Codable, Sendable {
    public var database: DatabaseScope
    public var since: String?
    public var limit: Int?
    public init(database: DatabaseScope, since: String? = nil, limit: Int? = nil) {
        self.database = database
        self.since = since
        self.limit = limit
    }
}

public struct FetchDatabaseChangesResult: Codable, Sendable {
    public var changedZones: [ZoneID]
    public var deletedZones: [ZoneID]
    public var purgedZones: [ZoneID]
    /// Zones deleted because the owner reset their encrypted data: keep the local rows and
    /// upload them all again into a recreated zone.
    public var encryptedDataResetZones: [ZoneID]
    public var token: String
    public var moreComing: Bool

    public init(changedZones: [ZoneID], deletedZones: [ZoneID], purgedZones: [ZoneID], encryptedDataResetZones: [ZoneID], token: String, moreComing: Bool) {
        self.changedZones = changedZones
        self.deletedZones = deletedZones
        self.purgedZones = purgedZones
        self.encryptedDataResetZones = encryptedDataResetZones
        self.token = token
        self.moreComing = moreComing
    }
}
