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
    /// from the tree; nil unless every key has the shape that decoding accepts (and no
    /// `shareInfo`), in which case the caller decodes the plain way — and gets its errors.
    package init?(tree: JSONValue) {
        guard case let .object(members) = tree,
              case let .string(recordName)? = members["recordName"],
              let zoneID = ZoneID(tree: members["zoneID"]),
              case let .string(recordType)? = members["recordType"] else { return nil }
        var fields: [String: JSONValue] = [:]
        let sentText = members["fields" + JSONParser.textSuffix]?.stringValue
        // No `fields` but their text: the parse kept them as text alone, in stored form.
        let textOnly = members["fields"] == nil && sentText != nil
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
        switch members["shareInfo"] {
        case nil, .null?: break
        default: return nil
        }
        self.init(recordName: recordName, zoneID: zoneID, recordType: recordType, fields: fields,
                  recordChangeTag: recordChangeTag, parent: parent, share: share)
        self.creationDate = creationDate
        self.modificationDate = modificationDate
        self.creatorUserRecordName = creatorUserRecordName
        self.lastModifiedUserRecordName = lastModifiedUserRecordName
        sentFieldsText = sentText
        if textOnly { storedFieldsToText() }
    }

    /// Reads a record from a request's bytes as `init(tree:)` reads it from the request's tree
    /// (fields in stored form kept as text alone): a record with nothing but its name, zone,
    /// type, fields in stored form and change tag, as a sync engine saves it. Nil for any other
    /// (its dates, creators, parent, share or fields of another form), and the request is parsed.
    /// `signature`: the fields' `StoredFields.typeSignature`, from the same scan.
    package init?(scanning scanner: inout JSONScanner, signature: inout [UInt8]?) {
        var name: String?, zone: ZoneID?, type: String?, text: String?, tag: String?, found: [UInt8]?
        let read = scanner.object { key, scanner in
            switch key {
            case "recordName": name = scanner.string(); return name != nil
            case "recordType": type = scanner.string(); return type != nil
            case "zoneID": zone = ZoneID(scanning: &scanner); return zone != nil
            case "recordChangeTag":
                guard let value = scanner.optionalString() else { return false }
                tag = value
                return true
            case "fields":
                guard let bytes = scanner.text(endingWith: { bytes, start in
                    guard let (end, fieldTypes) = StoredFields.endAndTypeSignature(bytes, from: start) else { return nil }
                    found = fieldTypes
                    return end
                }) else { return false }
                text = String(decoding: bytes, as: UTF8.self)
                return true
            case "creationDate", "modificationDate", "creatorUserRecordName", "lastModifiedUserRecordName", "parent", "share", "shareInfo",
                 "fields" + JSONParser.textSuffix:
                return false
            default:
                return scanner.skipValue()
            }
        }
        guard read, let name, let zone, let type, let text else { return nil }
        self.init(recordName: name, zoneID: zone, recordType: type, recordChangeTag: tag)
        sentFieldsText = text
        storedFieldsToText()
        signature = found
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
            try FieldCoding.encode(fieldsText.flatMap { FieldsJSON.parse($0)?.objectValue } ?? fields, into: &nested)
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
