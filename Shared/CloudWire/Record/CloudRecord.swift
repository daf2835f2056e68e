import FoundationEssentials
import MeowWire

/// A record on the wire. `fields` maps a field name to `{"type": …, "value": …}`; field types
/// the server does not know are kept and returned unchanged.
public struct CloudRecord: Codable, Sendable, Hashable {
    /// The record's values live behind one reference, copied on the first write to a shared one:
    /// a request's records are copied into its items, plans, pending map and reply, and a copy
    /// of a record holding a dozen strings was a dozen retains (and releases), a sixth of a
    /// records.modify's time.
    private var storage: Storage

    public var recordName: String {
        get { storage.recordName }
        _modify { yield &unique().recordName }
    }
    public var zoneID: ZoneID {
        get { storage.zoneID }
        _modify { yield &unique().zoneID }
    }
    public var recordType: String {
        get { storage.recordType }
        _modify { yield &unique().recordType }
    }
    /// The fields. A record that has them as text (`fieldsText`) parses it only when they are
    /// read here; setting them leaves the text behind.
    public var fields: [String: JSONValue] {
        get { storage.tree ?? storage.text.flatMap { (try? JSONParser.parse($0)).flatMap(FieldCoding.normalized) } ?? [:] }
        set {
            let storage = unique()
            storage.tree = newValue
            storage.text = nil
        }
    }

    /// The fields as their canonical text (`RecordFields`), when the record has them so: read in
    /// stored form from a message (the record's reader keeps them as text alone), or a stored
    /// record's text a reply writes as it is (a record's text is never parsed only to be written
    /// again). Setting it makes it the fields.
    public var fieldsText: String? {
        get { storage.text }
        set {
            let storage = unique()
            storage.text = newValue
            storage.tree = nil
        }
    }

    /// The fields exist only as `fieldsText` (a request's fields in stored form).
    package var fieldsAreStoredText: Bool { storage.tree == nil && storage.text != nil }
    public var recordChangeTag: String? {
        get { storage.recordChangeTag }
        _modify { yield &unique().recordChangeTag }
    }
    public var creationDate: Double? {
        get { storage.creationDate }
        _modify { yield &unique().creationDate }
    }
    public var modificationDate: Double? {
        get { storage.modificationDate }
        _modify { yield &unique().modificationDate }
    }
    public var creatorUserRecordName: String? {
        get { storage.creatorUserRecordName }
        _modify { yield &unique().creatorUserRecordName }
    }
    public var lastModifiedUserRecordName: String? {
        get { storage.lastModifiedUserRecordName }
        _modify { yield &unique().lastModifiedUserRecordName }
    }
    public var parent: RecordReference? {
        get { storage.parent }
        _modify { yield &unique().parent }
    }
    public var share: RecordReference? {
        get { storage.share }
        _modify { yield &unique().share }
    }
    public var shareInfo: ShareInfo? {
        get { storage.shareInfo }
        _modify { yield &unique().shareInfo }
    }

    public init(recordName: String, zoneID: ZoneID, recordType: String, fields: [String: JSONValue] = [:],
                recordChangeTag: String? = nil, parent: RecordReference? = nil, share: RecordReference? = nil) {
        storage = Storage(recordName: recordName, zoneID: zoneID, recordType: recordType)
        storage.tree = fields
        storage.recordChangeTag = recordChangeTag
        storage.parent = parent
        storage.share = share
    }

    /// Through the one reader (`init(reading:)`).
    public init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }

    /// When set, `fields` is left out of the encoded record (records.modify with
    /// `"returnFields": false`: the client keeps the fields it sent and takes the metadata).
    package var omitsFields: Bool {
        get { storage.omitsFields }
        _modify { yield &unique().omitsFields }
    }
    /// When set, only `recordName` and `recordChangeTag` are encoded (records.modify with
    /// `"reply": "tags"`).
    package var tagOnly: Bool {
        get { storage.tagOnly }
        _modify { yield &unique().tagOnly }
    }

    package enum CodingKeys: String, CodingKey {
        case recordName, zoneID, recordType, fields, recordChangeTag, creationDate, modificationDate
        case creatorUserRecordName, lastModifiedUserRecordName, parent, share, shareInfo
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try encode(into: &c)
    }

    package var isShare: Bool { recordType == CloudKitNames.shareRecordType }

    /// The storage, copied first when another record shares it.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    public static func == (lhs: CloudRecord, rhs: CloudRecord) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.values == rhs.storage.values
    }

    public func hash(into hasher: inout Hasher) { storage.values.hash(into: &hasher) }

    /// A record's values. `@unchecked Sendable`: a record writes to its storage only when it
    /// holds the one reference to it (`unique()`), so storage shared between records or
    /// threads is never written. For the same reason no two accesses to a value can overlap,
    /// so they go without the runtime's exclusivity check (`@exclusivity(unchecked)`), which
    /// every read of a class's property otherwise makes.
    private final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var recordName: String
        @exclusivity(unchecked) var zoneID: ZoneID
        @exclusivity(unchecked) var recordType: String
        /// Exactly one of the two is the fields (`tree` when both are nil: none).
        @exclusivity(unchecked) var tree: [String: JSONValue]?
        @exclusivity(unchecked) var text: String?
        @exclusivity(unchecked) var recordChangeTag: String?
        @exclusivity(unchecked) var creationDate: Double?
        @exclusivity(unchecked) var modificationDate: Double?
        @exclusivity(unchecked) var creatorUserRecordName: String?
        @exclusivity(unchecked) var lastModifiedUserRecordName: String?
        @exclusivity(unchecked) var parent: RecordReference?
        @exclusivity(unchecked) var share: RecordReference?
        @exclusivity(unchecked) var shareInfo: ShareInfo?
        @exclusivity(unchecked) var omitsFields = false
        @exclusivity(unchecked) var tagOnly = false

        init(recordName: String, zoneID: ZoneID, recordType: String) {
            self.recordName = recordName
            self.zoneID = zoneID
            self.recordType = recordType
        }

        func copy() -> Storage {
            let copy = Storage(recordName: recordName, zoneID: zoneID, recordType: recordType)
            copy.tree = tree
            copy.text = text
            copy.recordChangeTag = recordChangeTag
            copy.creationDate = creationDate
            copy.modificationDate = modificationDate
            copy.creatorUserRecordName = creatorUserRecordName
            copy.lastModifiedUserRecordName = lastModifiedUserRecordName
            copy.parent = parent
            copy.share = share
            copy.shareInfo = shareInfo
            copy.omitsFields = omitsFields
            copy.tagOnly = tagOnly
            return copy
        }

        /// Every value, for equality and hashing (as a struct of them would compare).
        var values: Values {
            Values(recordName: recordName, zoneID: zoneID, recordType: recordType, tree: tree, text: text, recordChangeTag: recordChangeTag,
                   creationDate: creationDate, modificationDate: modificationDate, creatorUserRecordName: creatorUserRecordName,
                   lastModifiedUserRecordName: lastModifiedUserRecordName, parent: parent, share: share, shareInfo: shareInfo,
                   omitsFields: omitsFields, tagOnly: tagOnly)
        }
    }

    private struct Values: Hashable {
        var recordName: String
        var zoneID: ZoneID
        var recordType: String
        var tree: [String: JSONValue]?
        var text: String?
        var recordChangeTag: String?
        var creationDate: Double?
        var modificationDate: Double?
        var creatorUserRecordName: String?
        var lastModifiedUserRecordName: String?
        var parent: RecordReference?
        var share: RecordReference?
        var shareInfo: ShareInfo?
        var omitsFields: Bool
        var tagOnly: Bool
    }
}

/// Field types the server checks; any other type is stored as given. Values follow
/// `FieldValueRules`: bytes and assets are base64, dates lie in years 0001–9999, an int64 fits 64 bits
/// (a negative zero double or date is accepted and kept as 0).
package enum FieldValidation {
    /// The first field with a problem: its name and what is wrong.
    package static func problem(in fields: [String: JSONValue]) -> (field: String, message: String)? {
        for (name, field) in fields {
            if field.isNull { continue }  // null in changedKeys means "remove this field"
            guard let object = field.objectValue, let type = object["type"]?.stringValue else {
                return (name, "field '\(name)' must be an object {\"type\": …, \"value\": …}")
            }
            if let problem = check(type: type, value: object["value"] ?? .null) { return (name, "field '\(name)': \(problem)") }
        }
        return nil
    }

    private static func check(type: String, value: JSONValue) -> String? {
        switch type {
        case "string": return value.stringValue == nil ? "a string field needs a string value" : nil
        case "int64":
            switch value {
            case .int: return nil
            case let .double(number) where number.rounded() == number:
                return "\(number) is outside int64's range (-9223372036854775808 to 9223372036854775807)"
            default: return "an int64 field needs an integer value"
            }
        case "double", "date":
            guard let number = value.doubleValue else { return "a \(type) field needs a number value" }
            if type == "date", !FieldValueRules.isDateInRange(number) {
                return "the date \(number) is outside \(FieldValueRules.dateRangeText)"
            }
            return nil
        case "bytes", "asset":
            guard let text = value.stringValue else { return "a \(type) field needs a base64 string value" }
            return FieldValueRules.isBase64(text) ? nil
                : "a \(type) field needs base64 text (A–Z, a–z, 0–9, + and /, padded with = to a multiple of 4 characters)"
        case "reference": return value["recordName"]?.stringValue == nil ? "a reference needs {\"recordName\": …}" : nil
        case "list":
            guard let items = value.arrayValue else { return "a list field needs an array value" }
            for item in items {
                guard let object = item.objectValue, let itemType = object["type"]?.stringValue else {
                    return "list items must be {\"type\": …, \"value\": …}"
                }
                if let problem = check(type: itemType, value: object["value"] ?? .null) { return problem }
            }
            return nil
        default: return nil
        }
    }
}
