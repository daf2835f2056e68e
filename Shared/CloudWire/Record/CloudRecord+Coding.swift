import MeowWire

/// Records on the wire are the hot path of records.modify (reading hundreds per request) and of
/// change fetching (writing hundreds per reply). These are the rules a record's fields are read
/// by, and the nested containers a record is encoded into (concrete types, so an encoder neither
/// makes an encoder per nested value nor probes each for special types).
package enum FieldCoding {
    /// The fields of a tree read by the fields' rules (`normalizedField`), or nil when `tree` is
    /// not an object or a field is neither null nor an object.
    package static func normalized(_ tree: JSONValue) -> [String: JSONValue]? {
        guard case var .object(fields) = tree else { return nil }
        for (name, field) in fields {
            guard let normalized = normalizedField(field) else { return nil }
            if normalized != field { fields[name] = normalized }
        }
        return fields
    }

    /// One `{"type": …, "value": …}` field: null stays null; other keys are kept as they are;
    /// the value is converted to its type where it can be (`normalizedValue`). nil when the field
    /// is not an object.
    package static func normalizedField(_ field: JSONValue) -> JSONValue? {
        if case .null = field { return .null }
        guard case var .object(members) = field else { return nil }
        guard let value = members["value"] else { return field }
        let normalized = normalizedValue(value, type: members["type"]?.stringValue)
        if normalized == value { return field }
        members["value"] = normalized
        return .object(members)
    }

    /// A field's value read by its type: a known type reads its value as that type when
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
            default: return value  // an action that is not a string: the value stays as sent
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
