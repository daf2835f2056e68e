import MeowWire

/// Records on the wire are the hot path of records.modify (decoding hundreds per request) and of
/// change fetching (encoding hundreds per reply). These helpers give the same values and the same
/// JSON as the plain Codable code, with far less of Foundation's per-value machinery:
///
/// - decoding takes `fields` straight from the request's parsed tree and applies `FieldDecoding`'s
///   rules to it (`FieldCoding.normalized`), instead of a keyed container per field;
/// - encoding writes nested containers with concrete types (`encode(_: String, forKey:)`, …), so
///   JSONEncoder neither makes an encoder per nested value nor probes each for special types.
package enum FieldCoding {
    /// The fields as `[String: FieldDecoding]` would decode them from `tree`, or nil when that
    /// decoding would throw (a field that is neither null nor an object; `fields` not an object).
    /// The caller then decodes the slow way, which throws the exact error.
    package static func normalized(_ tree: JSONValue) -> [String: JSONValue]? {
        guard case var .object(fields) = tree else { return nil }
        for (name, field) in fields {
            guard let normalized = normalizedField(field) else { return nil }
            if normalized != field { fields[name] = normalized }
        }
        return fields
    }

    /// One `{"type": …, "value": …}` field as `FieldDecoding` reads it: null stays null; other
    /// keys are kept as they are; the value is converted to its type where `FieldDecoding`
    /// converts it. nil where `FieldDecoding` throws (the field is not an object).
    package static func normalizedField(_ field: JSONValue) -> JSONValue? {
        if case .null = field { return .null }
        guard case var .object(members) = field else { return nil }
        guard let value = members["value"] else { return field }
        let normalized = normalizedValue(value, type: members["type"]?.stringValue)
        if normalized == value { return field }
        members["value"] = normalized
        return .object(members)
    }

    /// `FieldDecoding.decodeValue` over a tree: a known type decodes its value as that type when
    /// it can (an integer date becomes a double, a whole double int64 an integer, a reference
    /// keeps recordName and action only, list items are fields); otherwise the value stays as is.
    package static func normalizedValue(_ value: JSONValue, type: String?) -> JSONValue {
        switch (type, value) {
        case ("int64", let .double(number)):
            // Only strictly inside ±2^63: -2^63 as a double may be -2^63-1 rounded (an integer
            // that does not fit an Int is read as a double), and must not become Int.min.
            guard abs(number) < 0x1p63 else { return value }
            return Int(exactly: number).map(JSONValue.int) ?? value
        case ("double", let .int(number)), ("date", let .int(number)):
            return .double(Double(number))
        case ("reference", let .object(members)):
            guard case let .string(recordName)? = members["recordName"] else { return value }
            var reference: [String: JSONValue] = ["recordName": .string(recordName)]
            switch members["action"] {
            case nil, .null?: break
            case let .string(action)?: reference["action"] = .string(action)
            default: return value  // Reference.action must be a string: FieldDecoding keeps the value
            }
            return .object(reference)
        case ("list", let .array(items)):
            var normalized: [JSONValue] = []
            normalized.reserveCapacity(items.count)
            for item in items {
                guard let field = normalizedField(item) else { return value }
                normalized.append(field)
            }
            return .array(normalized)
        default:
            return value
        }
    }

    /// Whether `decoder` decodes from a parsed tree (`JSONValueDecoder`), where asking for a
    /// `JSONValue` hands back the tree as is. Under other decoders (Foundation's) the rules above
    /// would run on a value found by probing, so those keep the plain `FieldDecoding` path.
    package static func isTreeDecoder(_ decoder: any Decoder) -> Bool {
        ObjectIdentifier(type(of: decoder)) == treeDecoderType
    }

    private static let treeDecoderType: ObjectIdentifier = {
        struct Probe: Decodable {
            let type: any Decoder.Type
            init(from decoder: any Decoder) { type = Swift.type(of: decoder) }
        }
        // Cannot fail: Probe reads nothing.
        return ObjectIdentifier((try? JSONValueDecoder().decode(Probe.self, from: .null))?.type ?? Probe.self as Any.Type)
    }()

    // MARK: Encoding

    /// Any string as a coding key (field names, keys of open-ended values).
    package struct Key: CodingKey {
        package var stringValue: String
        package var intValue: Int? { nil }
        package init(_ string: String) { stringValue = string }
        package init(stringValue: String) { self.stringValue = stringValue }
        package init?(intValue: Int) { nil }
    }

    /// `object` as `[String: JSONValue]`'s encoding writes it, into a keyed container.
    package static func encode(_ object: [String: JSONValue], into container: inout KeyedEncodingContainer<Key>) throws {
        for (name, value) in object { try encode(value, forKey: Key(name), into: &container) }
    }

    package static func encode(_ value: JSONValue, forKey key: Key, into container: inout KeyedEncodingContainer<Key>) throws {
        switch value {
        case .null: try container.encodeNil(forKey: key)
        case let .bool(flag): try container.encode(flag, forKey: key)
        case let .int(number): try container.encode(number, forKey: key)
        case let .double(number): try container.encode(number, forKey: key)
        case let .string(text): try container.encode(text, forKey: key)
        case let .array(items):
            var nested = container.nestedUnkeyedContainer(forKey: key)
            try encode(items, into: &nested)
        case let .object(members):
            var nested = container.nestedContainer(keyedBy: Key.self, forKey: key)
            try encode(members, into: &nested)
        }
    }

    package static func encode(_ items: [JSONValue], into container: inout any UnkeyedEncodingContainer) throws {
        for item in items {
            switch item {
            case .null: try container.encodeNil()
            case let .bool(flag): try container.encode(flag)
            case let .int(number): try container.encode(number)
            case let .double(number): try container.encode(number)
            case let .string(text): try container.encode(text)
            case let .array(nestedItems):
                var nested = container.nestedUnkeyedContainer()
                try encode(nestedItems, into: &nested)
            case let .object(members):
                var nested = container.nestedContainer(keyedBy: Key.self)
                try encode(members, into: &nested)
            }
        }
    }
}

extension CloudRecord {
    /// The record `init(from:)` decodes from `tree` under `JSONValueDecoder`, built straight
    /// from the tree; nil unless every key has the shape that decoding accepts, in which case
    /// the caller decodes the plain way — and gets its errors. Fields the parse kept as text
    /// alone (in stored form) stay that text (`fieldsText`).
    package init?(tree: JSONValue) {
        guard case let .object(members) = tree,
              case let .string(recordName)? = members["recordName"],
              let zoneID = ZoneID(tree: members["zoneID"]),
              case let .string(recordType)? = members["recordType"] else { return nil }
        var fields: [String: JSONValue] = [:]
        switch members["fields"] {
        case nil, .null?: break
        case let tree?:
            guard let normalized = FieldCoding.normalized(tree) else { return nil }
            fields = normalized
        }
        guard let recordChangeTag = TreeField.string(members["recordChangeTag"]),
              let creationDate = TreeField.double(members["creationDate"]),
              let modificationDate = TreeField.double(members["modificationDate"]),
              let creatorUserRecordName = TreeField.string(members["creatorUserRecordName"]),
              let lastModifiedUserRecordName = TreeField.string(members["lastModifiedUserRecordName"]),
              let parent = TreeField.reference(members["parent"]),
              let share = TreeField.reference(members["share"]) else { return nil }
        var shareInfo: ShareInfo?
        switch members["shareInfo"] {
        case nil, .null?: break
        case let info?:
            // (A share's participants: rare, and read as `init(from:)` reads them.)
            guard let decoded = try? JSONValueDecoder().decode(ShareInfo.self, from: info) else { return nil }
            shareInfo = decoded
        }
        self.init(recordName: recordName, zoneID: zoneID, recordType: recordType, fields: fields,
                  recordChangeTag: recordChangeTag, parent: parent, share: share)
        self.creationDate = creationDate
        self.modificationDate = modificationDate
        self.creatorUserRecordName = creatorUserRecordName
        self.lastModifiedUserRecordName = lastModifiedUserRecordName
        self.shareInfo = shareInfo
        // No `fields` but their text: the parse kept them as text alone, in stored form.
        if members["fields"] == nil, let text = members["fields" + JSONParser.textSuffix]?.stringValue { fieldsText = text }
    }

    /// Reads a record where `scanner` is, as `init(tree:)` reads it from a tree parsed keeping
    /// fields in stored form as text alone (both services read hundreds per message this way).
    /// Nil for anything it does not take (fields not in stored form, a share's `shareInfo`), and
    /// the caller parses the message.
    /// `fieldsEnd`: where the fields object that starts at the given index ends, nil when it is
    /// not in stored form: `StoredFields.end`, or a variant that keeps what its scan read
    /// (`endAndTypeSignature`, `endAndFields`).
    package init?(scanning scanner: inout JSONScanner, fieldsEnd: (UnsafeBufferPointer<UInt8>, Int) -> Int?) {
        var name: String?, zone: ZoneID?, type: String?, text: String?, tag: String?
        var created: Double?, modified: Double?, creator: String?, modifier: String?
        var parent: RecordReference?, share: RecordReference?
        let read = scanner.object { key, scanner in
            switch key {
            case "recordName": name = scanner.string(); return name != nil
            case "recordType": type = scanner.string(); return type != nil
            case "zoneID": zone = ZoneID(scanning: &scanner); return zone != nil
            case "recordChangeTag": return Self.optionalString(&scanner, into: &tag)
            case "creatorUserRecordName": return Self.optionalString(&scanner, into: &creator)
            case "lastModifiedUserRecordName": return Self.optionalString(&scanner, into: &modifier)
            case "creationDate": return Self.optionalNumber(&scanner, into: &created)
            case "modificationDate": return Self.optionalNumber(&scanner, into: &modified)
            case "parent": return Self.reference(&scanner, into: &parent)
            case "share": return Self.reference(&scanner, into: &share)
            case "fields":
                guard let bytes = scanner.text(endingWith: fieldsEnd) else { return false }
                text = String(decoding: bytes, as: UTF8.self)
                return true
            case "shareInfo":
                return scanner.peek() == UInt8(ascii: "n") && scanner.optionalString() == .some(nil)
            case "fields" + JSONParser.textSuffix:
                return false
            default:
                return scanner.skipValue()
            }
        }
        guard read, let name, let zone, let type else { return nil }
        self.init(recordName: name, zoneID: zone, recordType: type, recordChangeTag: tag, parent: parent, share: share)
        creationDate = created
        modificationDate = modified
        creatorUserRecordName = creator
        lastModifiedUserRecordName = modifier
        if let text { fieldsText = text }
    }

    /// A string or null (nil) into `value`; false for anything else.
    private static func optionalString(_ scanner: inout JSONScanner, into value: inout String?) -> Bool {
        guard let read = scanner.optionalString() else { return false }
        value = read
        return true
    }

    /// A number or null (nil) into `value`, as a tree gives it (`TreeField.double`: an integer
    /// is read as one, then made a Double); false for anything else.
    private static func optionalNumber(_ scanner: inout JSONScanner, into value: inout Double?) -> Bool {
        guard let first = scanner.peek() else { return false }
        switch first {
        case UInt8(ascii: "n"):
            guard scanner.optionalString() == .some(nil) else { return false }
            value = nil
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = scanner.index
            guard scanner.skipValue() else { return false }
            let bytes = UnsafeBufferPointer(rebasing: scanner.bytes[start..<scanner.index])
            let text = String(decoding: bytes, as: UTF8.self)
            if !bytes.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }), let integer = Int(text) {
                value = Double(integer)
            } else {
                guard let number = Double(text), number.isFinite else { return false }
                value = number
            }
            return true
        default:
            return false
        }
    }

    /// A reference (`{"recordName": …, "action": …}`, other members skipped) or null into
    /// `value`, as `TreeField.reference` reads one; false for anything else.
    private static func reference(_ scanner: inout JSONScanner, into value: inout RecordReference?) -> Bool {
        if scanner.peek() == UInt8(ascii: "n") {
            guard scanner.optionalString() == .some(nil) else { return false }
            value = nil
            return true
        }
        var name: String?, action: String?
        let read = scanner.object { member, scanner in
            switch member {
            case "recordName": name = scanner.string(); return name != nil
            case "action": return optionalString(&scanner, into: &action)
            default: return scanner.skipValue()
            }
        }
        guard read, let name else { return false }
        value = RecordReference(recordName: name, action: action)
        return true
    }

    /// `saves` of a request: from the tree when the decoder has one and every record takes the
    /// fast path, else through `[CloudRecord]`'s decoding (same values, same errors).
    package static func decodeArrayIfPresent<Key: CodingKey>(_ c: KeyedDecodingContainer<Key>, forKey key: Key,
                                                     _ decoder: any Decoder) throws -> [CloudRecord]? {
        if FieldCoding.isTreeDecoder(decoder), case let .array(items)? = try c.decodeIfPresent(JSONValue.self, forKey: key) {
            var records: [CloudRecord] = []
            records.reserveCapacity(items.count)
            for item in items {
                guard let record = CloudRecord(tree: item) else { break }
                records.append(record)
            }
            if records.count == items.count { return records }
        }
        return try c.decodeIfPresent([CloudRecord].self, forKey: key)
    }

    /// The record's keys into `c` (its own container, or one nested in a reply's array).
    package func encode(into c: inout KeyedEncodingContainer<CodingKeys>) throws {
        try c.encode(recordName, forKey: .recordName)
        if tagOnly {
            try c.encodeIfPresent(recordChangeTag, forKey: .recordChangeTag)
            return
        }
        var zone = c.nestedContainer(keyedBy: ZoneID.CodingKeys.self, forKey: .zoneID)
        try zoneID.encode(into: &zone)
        try c.encode(recordType, forKey: .recordType)
        if !omitsFields {
            var nested = c.nestedContainer(keyedBy: FieldCoding.Key.self, forKey: .fields)
            try FieldCoding.encode(fields, into: &nested)
        }
        try c.encodeIfPresent(recordChangeTag, forKey: .recordChangeTag)
        try c.encodeIfPresent(creationDate, forKey: .creationDate)
        try c.encodeIfPresent(modificationDate, forKey: .modificationDate)
        try c.encodeIfPresent(creatorUserRecordName, forKey: .creatorUserRecordName)
        try c.encodeIfPresent(lastModifiedUserRecordName, forKey: .lastModifiedUserRecordName)
        if let parent {
            var nested = c.nestedContainer(keyedBy: RecordReference.CodingKeys.self, forKey: .parent)
            try parent.encode(into: &nested)
        }
        if let share {
            var nested = c.nestedContainer(keyedBy: RecordReference.CodingKeys.self, forKey: .share)
            try share.encode(into: &nested)
        }
        try c.encodeIfPresent(shareInfo, forKey: .shareInfo)
    }

    /// Records as an array of nested containers (no encoder per record).
    package static func encode(_ records: [CloudRecord], into container: inout any UnkeyedEncodingContainer) throws {
        for record in records {
            var nested = container.nestedContainer(keyedBy: CodingKeys.self)
            try record.encode(into: &nested)
        }
    }
}

/// Optional values of a tree as `decodeIfPresent` reads them: the outer nil is "decoding would
/// throw"; `.some(nil)` is absent or null.
package enum TreeField {
    package static func string(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: return .some(nil)
        case let .string(text)?: return .some(text)
        default: return nil
        }
    }

    package static func double(_ value: JSONValue?) -> Double?? {
        switch value {
        case nil, .null?: return .some(nil)
        case let .double(number)?: return .some(number)
        case let .int(number)?: return .some(Double(number))
        default: return nil
        }
    }

    package static func reference(_ value: JSONValue?) -> RecordReference?? {
        switch value {
        case nil, .null?: return .some(nil)
        case let .object(members)?:
            guard case let .string(recordName)? = members["recordName"], let action = string(members["action"]) else { return nil }
            return .some(RecordReference(recordName: recordName, action: action))
        default: return nil
        }
    }
}
