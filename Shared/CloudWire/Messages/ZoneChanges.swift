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

extension FetchZoneChangesResult {
    /// A page as a client reads it from the reply's tree (parsed keeping fields in stored form
    /// as text alone, `CloudRecord(tree:)`): records that do not read and deletions without a
    /// name are left out, a deletion without a type has "", an absent token is "" and
    /// `moreComing` false.
    public init(tree: JSONValue) {
        let deleted = (tree["deleted"]?.arrayValue ?? []).compactMap { item -> DeletedRecord? in
            guard let name = item["recordName"]?.stringValue else { return nil }
            return DeletedRecord(recordName: name, recordType: item["recordType"]?.stringValue ?? "")
        }
        self.init(changed: (tree["changed"]?.arrayValue ?? []).compactMap { CloudRecord(tree: $0) }, deleted: deleted,
                  token: tree["token"]?.stringValue ?? "", moreComing: tree["moreComing"]?.boolValue ?? false)
    }

    /// Reads a page from the reply's bytes as `init(tree:)` reads it from its tree (a device's
    /// pages of 1,000 records, without a tree): nil when it cannot, and the reply is parsed.
    /// `fields`: where a changed record's stored-form fields end, and what the scan read of
    /// them (`StoredFields.endAndFields`); the page's `fields` holds that per changed record.
    public static func scanned<T>(_ bytes: UnsafeBufferPointer<UInt8>,
                                  fields: (UnsafeBufferPointer<UInt8>, Int) -> (end: Int, read: T)?) -> (page: FetchZoneChangesResult, fields: [T?])? {
        var scanner = JSONScanner(bytes)
        var changed: [CloudRecord] = [], read: [T?] = [], deleted: [DeletedRecord] = []
        var token = "", moreComing = false
        let page = scanner.object { key, scanner in
            switch key {
            case "changed":
                changed = []
                read = []
                return scanner.array { scanner in
                    var found: T?
                    guard let record = CloudRecord(scanning: &scanner, fieldsEnd: { bytes, start in
                        guard let (end, kept) = fields(bytes, start) else { return nil }
                        found = kept
                        return end
                    }) else { return false }
                    changed.append(record)
                    read.append(found)
                    return true
                }
            case "deleted":
                deleted = []
                return scanner.array { scanner in
                    var name: String?, type = ""
                    let item = scanner.object { member, scanner in
                        switch member {
                        case "recordName": name = scanner.string(); return name != nil
                        case "recordType":
                            guard let value = scanner.string() else { return false }
                            type = value
                            return true
                        default: return scanner.skipValue()
                        }
                    }
                    guard item, let name else { return false }
                    deleted.append(DeletedRecord(recordName: name, recordType: type))
                    return true
                }
            case "token":
                guard let value = scanner.string() else { return false }
                token = value
                return true
            case "moreComing":
                guard let value = scanner.bool() else { return false }
                moreComing = value
                return true
            default: return scanner.skipValue()
            }
        }
        guard page, scanner.atEnd else { return nil }
        return (FetchZoneChangesResult(changed: changed, deleted: deleted, token: token, moreComing: moreComing), read)
    }

    /// The token to ask the next page from, when the page's tree says more is coming.
    public static func nextToken(_ tree: JSONValue) -> String? {
        guard tree["moreComing"]?.boolValue == true else { return nil }
        return tree["token"]?.stringValue ?? ""
    }
}
