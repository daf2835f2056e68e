import MeowWire

/// changes.fetchZone: a page of a zone's changes since a token.
public struct FetchZoneChangesParams: Codable, Sendable {
    public var database: DatabaseScope
    public var zoneID: ZoneID
    /// The token of the last page applied; absent or null means "from the beginning".
    public var since: String?
    /// Most records (changed + deleted) per page.
    public var limit: Int?
    public init(database: DatabaseScope, zoneID: ZoneID, since: String? = nil, limit: Int? = nil) {
        self.database = database
        self.zoneID = zoneID
        self.since = since
        self.limit = limit
    }
}

public struct DeletedRecord: Codable, Sendable, Hashable {
    public var recordName: String
    public var recordType: String

    public init(recordName: String, recordType: String) {
        self.recordName = recordName
        self.recordType = recordType
    }
}

public struct FetchZoneChangesResult: Codable, Sendable {
    public var changed: [CloudRecord]
    public var deleted: [DeletedRecord]
    public var token: String
    public var moreComing: Bool

    enum CodingKeys: String, CodingKey { case changed, deleted, token, moreComing }

    /// Records as nested containers (see FieldCoding): pages of many records are the hot path.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        var records = c.nestedUnkeyedContainer(forKey: .changed)
        try CloudRecord.encode(changed, into: &records)
        try c.encode(deleted, forKey: .deleted)
        try c.encode(token, forKey: .token)
        try c.encode(moreComing, forKey: .moreComing)
    }

    public init(changed: [CloudRecord], deleted: [DeletedRecord], token: String, moreComing: Bool) {
        self.changed = changed
        self.deleted = deleted
        self.token = token
        self.moreComing = moreComing
    }
}

/// The page written as JSON text directly (see `JSONTextWritable`), its records by
/// `CloudRecord.writeRecords`.
extension FetchZoneChangesResult: JSONTextWritable {
    public func writeJSON(to out: inout String) -> Bool {
        guard CloudRecord.writeRecords("changed", changed, deleted: deleted, to: &out, { item, out in
            out += #"{"recordName":"#; JSONWriter.appendString(item.recordName, to: &out)
            out += #","recordType":"#; JSONWriter.appendString(item.recordType, to: &out)
            out += "}"
        }) else { return false }
        out += #","token":"#; JSONWriter.appendString(token, to: &out)
        out += moreComing ? #","moreComing":true}"# : #","moreComing":false}"#
        return true
    }
}
