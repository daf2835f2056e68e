import FoundationEssentials
import MeowWire

/// A record on the wire. `fields` maps a field name to `{"type": …, "value": …}`; field types
/// the server does not know are kept and returned unchanged.
public struct CloudRecord: Codable, Sendable, Hashable {
    public var recordName: String
    public var zoneID: ZoneID
    public var recordType: String
    /// The fields. A record that has them as text (`fieldsText`) parses it only when they are
    /// read here; setting them leaves the text behind.
    public var fields: [String: JSONValue] {
        get { tree ?? text.flatMap { FieldsJSON.parse($0).flatMap(FieldCoding.normalized) } ?? [:] }
        set {
            tree = newValue
            text = nil
        }
    }

    /// The fields as their canonical text (`RecordFields`), when the record has them so: read in
    /// stored form from a message (kept as text alone by the parse, or by a scan), or a stored
    /// record's text a reply writes as it is (parsing each record's text only to write it again
    /// cost half of a fetched record's time). Setting it makes it the fields.
    public var fieldsText: String? {
        get { text }
        set {
            text = newValue
            tree = nil
        }
    }

    /// Exactly one of the two is the fields (`tree` when both are nil: none).
    private var tree: [String: JSONValue]?
    private var text: String?

    /// The fields exist only as `fieldsText` (a request's fields in stored form).
    package var fieldsAreStoredText: Bool { tree == nil && text != nil }
    public var recordChangeTag: String?
    public var creationDate: Double?
    public var modificationDate: Double?
    public var creatorUserRecordName: String?
    public var lastModifiedUserRecordName: String?
    public var parent: RecordReference?
    public var share: RecordReference?
    public var shareInfo: ShareInfo?

    public init(recordName: String, zoneID: ZoneID, recordType: String, fields: [String: JSONValue] = [:],
                recordChangeTag: String? = nil, parent: RecordReference? = nil, share: RecordReference? = nil) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.recordType = recordType
        self.fields = fields
        self.recordChangeTag = recordChangeTag
        self.parent = parent
        self.share = share
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        recordName = try c.decode(String.self, forKey: .recordName)
        zoneID = try c.decode(ZoneID.self, forKey: .zoneID)
        recordType = try c.decode(String.self, forKey: .recordType)
        if c.contains(.fields) {
            fields = try Self.decodeFields(c, decoder)
        } else if let text = try decoder.container(keyedBy: FieldCoding.Key.self)
                    .decodeIfPresent(String.self, forKey: FieldCoding.Key("fields" + JSONParser.textSuffix)),
                  StoredFields.isStoredForm(text) {
            // The message's parse kept these fields as text alone (`SyncService.keptRequestText`).
            fieldsText = text
        } else {
            fields = [:]
        }
        recordChangeTag = try c.decodeIfPresent(String.self, forKey: .recordChangeTag)
        creationDate = try c.decodeIfPresent(Double.self, forKey: .creationDate)
        modificationDate = try c.decodeIfPresent(Double.self, forKey: .modificationDate)
        creatorUserRecordName = try c.decodeIfPresent(String.self, forKey: .creatorUserRecordName)
        lastModifiedUserRecordName = try c.decodeIfPresent(String.self, forKey: .lastModifiedUserRecordName)
        parent = try c.decodeIfPresent(RecordReference.self, forKey: .parent)
        share = try c.decodeIfPresent(RecordReference.self, forKey: .share)
        shareInfo = try c.decodeIfPresent(ShareInfo.self, forKey: .shareInfo)
    }

    /// When set, `fields` is left out of the encoded record (records.modify with
    /// `"returnFields": false`: the client keeps the fields it sent and takes the metadata).
    package var omitsFields = false
    /// When set, only `recordName` and `recordChangeTag` are encoded (records.modify with
    /// `"reply": "tags"`).
    package var tagOnly = false

    package enum CodingKeys: String, CodingKey {
        case recordName, zoneID, recordType, fields, recordChangeTag, creationDate, modificationDate
        case creatorUserRecordName, lastModifiedUserRecordName, parent, share, shareInfo
    }

    /// Fields from a parsed tree go through `FieldCoding.normalized` (FieldDecoding's rules
    /// without a container per field); anything else, or a field that fails, the plain way.
    private static func decodeFields(_ c: KeyedDecodingContainer<CodingKeys>, _ decoder: any Decoder) throws -> [String: JSONValue] {
        if FieldCoding.isTreeDecoder(decoder) {
            switch try c.decodeIfPresent(JSONValue.self, forKey: .fields) {
            case nil, .null?: return [:]
            case let tree?: if let fields = FieldCoding.normalized(tree) { return fields }
            }
        }
        return try c.decodeIfPresent([String: FieldDecoding].self, forKey: .fields)?.mapValues(\.value) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try encode(into: &c)
    }

    package var isShare: Bool { recordType == CloudKitNames.shareRecordType }
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

/// Decodes one field `{"type": …, "value": …}` guided by its type. JSONValue's own decoder finds
/// a value's kind by trying each in turn, and every failed try throws, which is slow on Linux;
/// records are the hot path, so known types decode in one step. Unknown types and mismatched
/// values fall back to the generic decoder (and the field check then reports the mismatch).
package struct FieldDecoding: Decodable {
    package let value: JSONValue

    package struct Key: CodingKey {
        package var stringValue: String
        package var intValue: Int? { nil }
        package init(stringValue: String) { self.stringValue = stringValue }
        package init?(intValue: Int) { nil }
    }

    package struct Reference: Decodable {
        var recordName: String
        var action: String?
    }

    package init(from decoder: any Decoder) throws {
        if try decoder.singleValueContainer().decodeNil() {
            value = .null
            return
        }
        let container = try decoder.container(keyedBy: Key.self)
        let typeKey = Key(stringValue: "type")
        let type = container.contains(typeKey) ? try? container.decode(String.self, forKey: typeKey) : nil
        var object: [String: JSONValue] = [:]
        for key in container.allKeys {
            if key.stringValue == "type", let type {
                object["type"] = .string(type)
            } else if key.stringValue == "value" {
                object["value"] = try Self.decodeValue(container, key, type: type)
            } else {
                object[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
            }
        }
        value = .object(object)
    }

    private static func decodeValue(_ container: KeyedDecodingContainer<Key>, _ key: Key, type: String?) throws -> JSONValue {
        switch type {
        case "string", "bytes", "asset":
            if let text = try? container.decode(String.self, forKey: key) { return .string(text) }
        case "int64":
            if let number = try? container.decode(Int.self, forKey: key) { return .int(number) }
        case "double", "date":
            if let number = try? container.decode(Double.self, forKey: key) { return .double(number) }
        case "reference":
            if let reference = try? container.decode(Reference.self, forKey: key) {
                var object: [String: JSONValue] = ["recordName": .string(reference.recordName)]
                if let action = reference.action { object["action"] = .string(action) }
                return .object(object)
            }
        case "list":
            if let items = try? container.decode([FieldDecoding].self, forKey: key) { return .array(items.map(\.value)) }
        default:
            break
        }
        return try container.decode(JSONValue.self, forKey: key)
    }
}
