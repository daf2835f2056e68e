import MeowWire

/// changes.fetchZone: a page of a zone's changes since a token.
public struct FetchZoneChangesParams: Codable, Sendable {
    public var database: DatabaseScope
    public var zoneID: ZoneID
    /// The token of the last page applied; absent or null means "from the beginning".
    public var since: ChangeToken?
    /// Most records (changed + deleted) per page.
    public var limit: Int?
    public init(database: DatabaseScope, zoneID: ZoneID, since: ChangeToken? = nil, limit: Int? = nil) {
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
    public var token: ChangeToken
    public var moreComing: Bool

    enum CodingKeys: String, CodingKey { case changed, deleted, token, moreComing }

    /// Through the one reader (`init(reading:)`).
    public init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }

    /// Records as nested containers (see FieldCoding): pages of many records are the hot path.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        var records = c.nestedUnkeyedContainer(forKey: .changed)
        try CloudRecord.encode(changed, into: &records)
        try c.encode(deleted, forKey: .deleted)
        try c.encode(token, forKey: .token)
        try c.encode(moreComing, forKey: .moreComing)
    }

    public init(changed: [CloudRecord], deleted: [DeletedRecord], token: ChangeToken, moreComing: Bool) {
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
        var bytes = JSONBytes(capacity: changed.count * 512 + deleted.count * 96 + 128)
        guard CloudRecord.writeRecords("changed", changed, deleted: deleted, to: &bytes, { item, out in
            out.append(#"{"recordName":"#); out.append(string: item.recordName)
            out.append(#","recordType":"#); out.append(string: item.recordType)
            out.append("}")
        }) else { return false }
        bytes.append(#","token":"#); bytes.append(string: token.text)
        bytes.append(moreComing ? #","moreComing":true}"# : #","moreComing":false}"#)
        bytes.append(to: &out)
        return true
    }
}

/// The page's one reader (a device reads pages of 1,000 records, without a tree): changed
/// records by `CloudRecord(reading:)`, deletions (a missing type is ""), the token ("" when
/// absent) and `moreComing` (false when absent). Other members are skipped.
extension FetchZoneChangesResult: JSONReadable {
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        self = try Self.read(&reader, fields: { bytes, start in StoredFields.end(bytes, from: start).map { (end: $0, read: ()) } }).page
    }

    /// Reads a whole reply. `fields`: where a changed record's stored-form fields end, and what
    /// the scan read of them (`StoredFields.endAndFields`); the answer's `fields` holds that per
    /// changed record (nil for fields not in stored form).
    public static func read<T>(_ bytes: UnsafeBufferPointer<UInt8>,
                               fields: (UnsafeBufferPointer<UInt8>, Int) -> (end: Int, read: T)?) throws(MessageReadError) -> (page: FetchZoneChangesResult, fields: [T?]) {
        var reader = MessageReader(bytes)
        let read = try read(&reader, fields: fields)
        try reader.finish()
        return read
    }

    private static func read<T>(_ reader: inout MessageReader,
                                fields: (UnsafeBufferPointer<UInt8>, Int) -> (end: Int, read: T)?) throws(MessageReadError) -> (page: FetchZoneChangesResult, fields: [T?]) {
        var changed: [CloudRecord] = [], read: [T?] = [], deleted: [DeletedRecord] = []
        var token = ChangeToken(""), moreComing = false
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "changed":
                changed = []
                read = []
                try reader.array { (reader) throws(MessageReadError) in
                    var found: T?
                    changed.append(try CloudRecord(reading: &reader, storedFieldsEnd: { bytes, start in
                        guard let (end, kept) = fields(bytes, start) else { return nil }
                        found = kept
                        return end
                    }))
                    read.append(found)
                }
            case "deleted":
                deleted = []
                try reader.array { (reader) throws(MessageReadError) in
                    var name: String?, type = ""
                    try reader.object { (member, reader) throws(MessageReadError) in
                        switch member {
                        case "recordName": name = try reader.string()
                        case "recordType": type = try reader.string()
                        default: try reader.skip()
                        }
                    }
                    guard let name else { throw reader.missing("recordName") }
                    deleted.append(DeletedRecord(recordName: name, recordType: type))
                }
            case "token": token = ChangeToken(try reader.string())
            case "moreComing": moreComing = try reader.bool()
            default: try reader.skip()
            }
        }
        return (FetchZoneChangesResult(changed: changed, deleted: deleted, token: token, moreComing: moreComing), read)
    }

    /// The token to ask the next page from, when the page's tree says more is coming.
    public static func nextToken(_ tree: JSONValue) -> ChangeToken? {
        guard tree["moreComing"]?.boolValue == true else { return nil }
        return ChangeToken(tree["token"]?.stringValue ?? "")
    }
}
