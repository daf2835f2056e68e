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

    /// Through the one reader (`init(reading:)`).
    public init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }
}

/// The reply's one reader (a device's fetch): every zone listed must read, an absent list is
/// empty, an absent token "" and `moreComing` false, as a zone-changes page reads. Other
/// members are skipped.
extension FetchDatabaseChangesResult: JSONReadable {
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var changed: [ZoneID] = [], deleted: [ZoneID] = [], purged: [ZoneID] = [], reset: [ZoneID] = []
        var token = ChangeToken(""), moreComing = false
        func zones(_ reader: inout MessageReader) throws(MessageReadError) -> [ZoneID] {
            var zones: [ZoneID] = []
            try reader.array { (reader) throws(MessageReadError) in zones.append(try ZoneID(reading: &reader)) }
            return zones
        }
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "changedZones": changed = try zones(&reader)
            case "deletedZones": deleted = try zones(&reader)
            case "purgedZones": purged = try zones(&reader)
            case "encryptedDataResetZones": reset = try zones(&reader)
            case "token": token = ChangeToken(try reader.string())
            case "moreComing": moreComing = try reader.bool()
            default: try reader.skip()
            }
        }
        self.init(changedZones: changed, deletedZones: deleted, purgedZones: purged, encryptedDataResetZones: reset, token: token, moreComing: moreComing)
    }
}
