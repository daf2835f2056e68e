import MeowWire
import StoreWire

/// A model's JSON text read with `MessageReader`, without `Codable`: every store-service decoded
/// its model (MeowCare's embedded text, or a `--model` file) at start, and the decoders' first
/// uses (each type's containers looked up by mangled name, conformance records scanned) were
/// most of that work.
///
/// The reader takes only what the Decodable forms take, as they take it, and gives up (nil) at
/// anything else — a missing or ill-typed member, a number the decoder would convert, a repeated
/// key: `load(bytes:)` then decodes the text through `Decodable`, whose refusal (with its words)
/// is the one a bad model file gets, or whose value stands where the reader was stricter.
enum ModelReading {
    /// The model the Decodable forms would decode from `json`, or nil where the reader gives up.
    static func read(_ json: [UInt8]) -> ManagedObjectModel? {
        json.withUnsafeBufferPointer { bytes in
            do throws(MessageReadError) {
                var reader = MessageReader(bytes)
                let model = try model(&reader)
                try reader.finish()
                return model
            } catch {
                return nil
            }
        }
    }

    /// The reader's refusal: `load(bytes:)` then asks the Decodable form what is wrong.
    private static let giveUp = MessageReadError(path: [], problem: .malformed)

    /// Walks an object, handing each member to `member`; a key seen twice gives up (the tree
    /// keeps the last, and what the first would have thrown is not what the decoder sees).
    private static func members(_ reader: inout MessageReader,
                                _ member: (String, inout MessageReader) throws(MessageReadError) -> Void) throws(MessageReadError) {
        var seen: Set<String> = []
        try reader.object { (key, reader) throws(MessageReadError) in
            guard seen.insert(key).inserted else { throw giveUp }
            try member(key, &reader)
        }
    }

    private static func model(_ reader: inout MessageReader) throws(MessageReadError) -> ManagedObjectModel {
        var name: String?, entities: [EntityDescription]?, configurations: [StoreConfiguration]?, orphanRepair: OrphanRepairRule?
        try members(&reader) { (key, reader) throws(MessageReadError) in
            switch key {
            case "name": name = try reader.string()
            case "entities": entities = try list(&reader, entity)
            case "configurations": configurations = try list(&reader, configuration)
            case "orphanRepair": orphanRepair = reader.readNull() ? nil : try rule(&reader)
            default: try reader.skip()
            }
        }
        guard let name, let entities, let configurations else { throw giveUp }
        return ManagedObjectModel(name: name, entities: entities, configurations: configurations, orphanRepair: orphanRepair)
    }

    /// An array (not null) of elements each read by `element`.
    private static func list<T>(_ reader: inout MessageReader, _ element: (inout MessageReader) throws(MessageReadError) -> T) throws(MessageReadError) -> [T] {
        var items: [T] = []
        try reader.array { (reader) throws(MessageReadError) in items.append(try element(&reader)) }
        return items
    }

    /// An optional member as `decodeIfPresent` takes it: null is nil.
    private static func optional<T>(_ reader: inout MessageReader, _ read: (inout MessageReader) throws(MessageReadError) -> T) throws(MessageReadError) -> T? {
        reader.readNull() ? nil : try read(&reader)
    }

    private static func string(_ reader: inout MessageReader) throws(MessageReadError) -> String { try reader.string() }
    private static func strings(_ reader: inout MessageReader) throws(MessageReadError) -> [String] { try list(&reader, string) }
    private static func bool(_ reader: inout MessageReader) throws(MessageReadError) -> Bool { try reader.bool() }

    /// A whole number written as one (a double the decoder would convert gives up).
    private static func integer(_ reader: inout MessageReader) throws(MessageReadError) -> Int {
        guard case let .int(number) = try reader.value() else { throw giveUp }
        return number
    }

    private static func entity(_ reader: inout MessageReader) throws(MessageReadError) -> EntityDescription {
        var name: String?, attributes: [AttributeDescription]?, relationships: [RelationshipDescription]?, indexes: [[String]]?
        var renamingIdentifier: String?, versionHashModifier: String?, uniquenessConstraints: [[String]]?
        try members(&reader) { (key, reader) throws(MessageReadError) in
            switch key {
            case "name": name = try reader.string()
            case "attributes": attributes = try optional(&reader) { (reader) throws(MessageReadError) in try list(&reader, attribute) }
            case "relationships": relationships = try optional(&reader) { (reader) throws(MessageReadError) in try list(&reader, relationship) }
            case "indexes": indexes = try optional(&reader) { (reader) throws(MessageReadError) in try list(&reader, strings) }
            case "renamingIdentifier": renamingIdentifier = try optional(&reader, string)
            case "versionHashModifier": versionHashModifier = try optional(&reader, string)
            case "uniquenessConstraints": uniquenessConstraints = try optional(&reader) { (reader) throws(MessageReadError) in try list(&reader, strings) }
            default: try reader.skip()
            }
        }
        guard let name else { throw giveUp }
        return EntityDescription(name: name, attributes: attributes ?? [], relationships: relationships ?? [], indexes: indexes ?? [],
                                 renamingIdentifier: renamingIdentifier, versionHashModifier: versionHashModifier,
                                 uniquenessConstraints: uniquenessConstraints ?? [])
    }

    private static func attribute(_ reader: inout MessageReader) throws(MessageReadError) -> AttributeDescription {
        var name: String?, type: AttributeType?, optionalFlag: Bool?, defaultValue: JSONValue?, allowedValues: [String]?
        var preserves: Bool?, renamingIdentifier: String?, versionHashModifier: String?, constraints = AttributeConstraints()
        var external: Bool?, transformer: String?
        try members(&reader) { (key, reader) throws(MessageReadError) in
            switch key {
            case "name": name = try reader.string()
            case "type": type = try reader.rawValue(AttributeType.self)
            case "optional": optionalFlag = try optional(&reader, bool)
            // A JSONValue member is taken as it is, null included (`decodeIfPresent` of a JSONValue).
            case "defaultValue": defaultValue = try reader.value()
            case "allowedValues": allowedValues = try optional(&reader, strings)
            case "preservesValueInHistoryOnDeletion": preserves = try optional(&reader, bool)
            case "renamingIdentifier": renamingIdentifier = try optional(&reader, string)
            case "versionHashModifier": versionHashModifier = try optional(&reader, string)
            case "minValue": constraints.minValue = try reader.value()
            case "maxValue": constraints.maxValue = try reader.value()
            case "minLength": constraints.minLength = try optional(&reader, integer)
            case "maxLength": constraints.maxLength = try optional(&reader, integer)
            case "regularExpression": constraints.regularExpression = try optional(&reader, string)
            case "allowsExternalBinaryDataStorage": external = try optional(&reader, bool)
            case "valueTransformerName": transformer = try optional(&reader, string)
            default: try reader.skip()
            }
        }
        guard let name, let type else { throw giveUp }
        var attribute = AttributeDescription(name: name, type: type, optional: optionalFlag ?? true)
        attribute.defaultValue = defaultValue
        attribute.allowedValues = allowedValues
        attribute.preservesValueInHistoryOnDeletion = preserves ?? false
        attribute.renamingIdentifier = renamingIdentifier
        attribute.versionHashModifier = versionHashModifier
        attribute.constraints = constraints
        attribute.allowsExternalBinaryDataStorage = external ?? false
        attribute.valueTransformerName = transformer
        return attribute
    }

    private static func relationship(_ reader: inout MessageReader) throws(MessageReadError) -> RelationshipDescription {
        var name: String?, destination: String?, toMany: Bool?, inverse: String?, deleteRule: DeleteRule?, optionalFlag: Bool?
        var renamingIdentifier: String?, versionHashModifier: String?, minCount: Int?, maxCount: Int?, ordered: Bool?
        try members(&reader) { (key, reader) throws(MessageReadError) in
            switch key {
            case "name": name = try reader.string()
            case "destination": destination = try reader.string()
            case "toMany": toMany = try optional(&reader, bool)
            case "inverse": inverse = try optional(&reader, string)
            case "deleteRule": deleteRule = try reader.optionalRawValue(DeleteRule.self)
            case "optional": optionalFlag = try optional(&reader, bool)
            case "renamingIdentifier": renamingIdentifier = try optional(&reader, string)
            case "versionHashModifier": versionHashModifier = try optional(&reader, string)
            case "minCount": minCount = try optional(&reader, integer)
            case "maxCount": maxCount = try optional(&reader, integer)
            case "ordered": ordered = try optional(&reader, bool)
            default: try reader.skip()
            }
        }
        guard let name, let destination else { throw giveUp }
        var relationship = RelationshipDescription(name: name, destination: destination, toMany: toMany ?? false, inverse: inverse,
                                                   deleteRule: deleteRule ?? .nullify, optional: optionalFlag ?? true)
        relationship.renamingIdentifier = renamingIdentifier
        relationship.versionHashModifier = versionHashModifier
        relationship.minCount = minCount
        relationship.maxCount = maxCount
        relationship.ordered = ordered ?? false
        return relationship
    }

    private static func configuration(_ reader: inout MessageReader) throws(MessageReadError) -> StoreConfiguration {
        var name: String?, scope: StoreScope?, entities: [String]?, usedWithCloudKit: Bool?
        try members(&reader) { (key, reader) throws(MessageReadError) in
            switch key {
            case "name": name = try reader.string()
            case "scope": scope = try reader.rawValue(StoreScope.self)
            case "entities": entities = try strings(&reader)
            case "usedWithCloudKit": usedWithCloudKit = try optional(&reader, bool)
            default: try reader.skip()
            }
        }
        guard let name, let scope, let entities else { throw giveUp }
        return StoreConfiguration(name: name, scope: scope, entities: entities, usedWithCloudKit: usedWithCloudKit)
    }

    private static func rule(_ reader: inout MessageReader) throws(MessageReadError) -> OrphanRepairRule {
        var child: String?, relationship: String?, parent: String?, flag: String?, values: [String: JSONValue]?
        try members(&reader) { (key, reader) throws(MessageReadError) in
            switch key {
            case "childEntity": child = try reader.string()
            case "relationship": relationship = try reader.string()
            case "parentEntity": parent = try reader.string()
            case "defaultFlag": flag = try reader.string()
            case "defaultValues":
                guard case let .object(members) = try reader.value() else { throw giveUp }
                values = members
            default: try reader.skip()
            }
        }
        guard let child, let relationship, let parent, let flag, let values else { throw giveUp }
        return OrphanRepairRule(childEntity: child, relationship: relationship, parentEntity: parent, defaultFlag: flag, defaultValues: values)
    }
}

extension OrphanRepairRule {
    init(childEntity: String, relationship: String, parentEntity: String, defaultFlag: String, defaultValues: [String: JSONValue]) {
        (self.childEntity, self.relationship, self.parentEntity) = (childEntity, relationship, parentEntity)
        (self.defaultFlag, self.defaultValues) = (defaultFlag, defaultValues)
    }
}
