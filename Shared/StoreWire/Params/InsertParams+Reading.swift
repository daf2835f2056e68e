import MeowWire

/// `object.insert`'s params read from the request's bytes (`JSONReadable`): a bulk insert of a
/// thousand objects needs no tree of the whole request and no `Decodable` pass over each item;
/// only each object's `values` becomes a tree, as the context converts them by name. Unknown
/// members are skipped and null reads as absent where a member is optional, as the decoder has them.
extension InsertParams: JSONReadable {
    /// A batch of about this many objects or more is read on two cores (`MessageReader`): a
    /// few hundred objects take far longer to read than handing part of them to another core.
    static let splitFrom = 256

    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var context: String?, entity: String?, values: AttributeValues?, store: String?, uuid: String?
        var zone: String?, zoneOwner: String?, objects: [InsertItem]?, returnObjectIDs: Bool?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "context": context = try reader.string()
            case "entity": entity = try reader.optionalString()
            case "values": values = try AttributeValues.read(optional: &reader)
            case "store": store = try reader.optionalString()
            case "uuid": uuid = try reader.optionalString()
            case "zone": zone = try reader.optionalString()
            case "zoneOwner": zoneOwner = try reader.optionalString()
            case "objects":
                objects = try reader.optionalArray(splittingFrom: Self.splitFrom, state: AttributeValues.KeysRead()) { (reader, keys) throws(MessageReadError) in
                    try InsertItem(reading: &reader, after: &keys)
                }
            case "returnObjectIDs": returnObjectIDs = try reader.optionalBool()
            default: try reader.skip()
            }
        }
        guard let context else { throw reader.missing("context") }
        self.init(context: context, entity: entity, values: values, store: store, uuid: uuid, zone: zone, zoneOwner: zoneOwner,
                  objects: objects, returnObjectIDs: returnObjectIDs)
    }
}

extension InsertItem: JSONReadable {
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var keys = AttributeValues.KeysRead()
        try self.init(reading: &reader, after: &keys)
    }

    /// One item of a batch, its values' keys compared with the item's before it (`keys`).
    init(reading reader: inout MessageReader, after keys: inout AttributeValues.KeysRead) throws(MessageReadError) {
        var entity: String?, values: AttributeValues?, store: String?, uuid: String?, zone: String?, zoneOwner: String?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "entity": entity = try reader.string()
            case "values": values = try AttributeValues.read(optional: &reader, after: &keys)
            case "store": store = try reader.optionalString()
            case "uuid": uuid = try reader.optionalString()
            case "zone": zone = try reader.optionalString()
            case "zoneOwner": zoneOwner = try reader.optionalString()
            default: try reader.skip()
            }
        }
        guard let entity else { throw reader.missing("entity") }
        self.init(entity: entity, values: values, store: store, uuid: uuid, zone: zone, zoneOwner: zoneOwner)
    }
}

extension AttributeValues {
    /// The keys of the values object read before, in order, when they were all different: a
    /// batch's objects send the same keys in the same order.
    struct KeysRead {
        var keys: [String] = []
    }

    /// An object of values here, or nil for null; anything else is refused as not an object.
    /// Scalars are read where they stand; only a nested array or object becomes a tree of its own.
    static func read(optional reader: inout MessageReader) throws(MessageReadError) -> AttributeValues? {
        var keys = KeysRead()
        return try read(optional: &reader, after: &keys)
    }

    /// As `read(optional:)`, and `before` becomes this object's keys. A repeated key: the last
    /// value stands in the key's first place, as in a dictionary. While every key so far is the
    /// one `before` has at its place, the key differs from those before it (theirs did), and
    /// no search is needed; past a difference each key is looked for among those read (a short
    /// linear scan: an object has a handful of keys).
    static func read(optional reader: inout MessageReader, after before: inout KeysRead) throws(MessageReadError) -> AttributeValues? {
        if reader.readNull() { return nil }
        guard reader.scanner.peek() == UInt8(ascii: "{") else { throw reader.error(.expected(.object)) }
        var members: [Member] = []
        members.reserveCapacity(max(12, before.keys.count))
        var asBefore = true
        try reader.object { (key, reader) throws(MessageReadError) in
            let value = try scalarOrTree(&reader)
            if asBefore, members.count < before.keys.count, before.keys[members.count] == key {
                members.append((key, value))
                return
            }
            asBefore = false
            if let index = members.firstIndex(where: { $0.key == key }) { members[index].value = value } else { members.append((key, value)) }
        }
        if !asBefore || members.count != before.keys.count { before.keys = members.map(\.key) }
        return AttributeValues(reading: members)
    }

    private static func scalarOrTree(_ reader: inout MessageReader) throws(MessageReadError) -> JSONValue {
        switch reader.scanner.peek() {
        case UInt8(ascii: "\"")?: return .string(try reader.string())
        case UInt8(ascii: "t")?, UInt8(ascii: "f")?: return .bool(try reader.bool())
        case UInt8(ascii: "n")?:
            guard reader.readNull() else { throw reader.error(.malformed) }
            return .null
        case UInt8(ascii: "-")?, (UInt8(ascii: "0")...UInt8(ascii: "9"))?:
            guard let number = reader.scanner.number() else { throw reader.error(.malformed) }
            return number
        default: return try reader.value()
        }
    }
}
