import MeowWire

/// changes.fetchDatabase: the zones changed, deleted, purged or reset since a token.
public struct FetchDatabaseChangesParams: Codable, Sendable {
    public var database: DatabaseScope
    public var since: ChangeToken?
    public var limit: Int?
    public init(database: DatabaseScope, since: ChangeToken? = nil, limit: Int? = nil) {
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
    public var token: ChangeToken
    public var moreComing: Bool

    public init(changedZones: [ZoneID], deletedZones: [ZoneID], purgedZones: [ZoneID], encryptedDataResetZones: [ZoneID], token: ChangeToken, moreComing: Bool) {
        self.changedZones = changedZones
        self.deletedZones = deletedZones
        self.purgedZones = purgedZones
        self.encryptedDataResetZones = encryptedDataResetZones
        self.token = token
        self.moreComing = moreComing
    }
}

extension FetchDatabaseChangesResult {
    /// The reply as a client reads it from its tree (a device's fetch): zones that do not read
    /// are left out, an absent list is empty, an absent token "" and `moreComing` false.
    public init(tree: JSONValue) {
        func zones(_ key: String) -> [ZoneID] { (tree[key]?.arrayValue ?? []).compactMap { try? ZoneID(tree: $0) } }
        self.init(changedZones: zones("changedZones"), deletedZones: zones("deletedZones"), purgedZones: zones("purgedZones"),
                  encryptedDataResetZones: zones("encryptedDataResetZones"), token: ChangeToken(tree["token"]?.stringValue ?? ""),
                  moreComing: tree["moreComing"]?.boolValue ?? false)
    }
}
