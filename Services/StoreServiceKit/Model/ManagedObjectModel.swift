import FoundationEssentials
import MeowWire
import StoreWire

/// The data model as data (like a compiled `.xcdatamodeld`): entities, their attributes and
/// relationships, and the configurations that say which store holds which entity.
///
/// ```swift
/// let model = try ManagedObjectModel.load(json: Data(text.utf8))
/// let event = model.entity(named: "CareEvent")
/// ```
public struct ManagedObjectModel: Sendable, Codable {
    public var name: String
    public var entities: [EntityDescription]
    /// Exactly one configuration with scope `private` and one with scope `shared`.
    public var configurations: [StoreConfiguration]
    /// The app's start-up orphan repair (MeowCare: CareEvents without a session), if it has one.
    public var orphanRepair: OrphanRepairRule?

    public func entity(named name: String) -> EntityDescription? {
        entities.first { $0.name == name }
    }

    public func configuration(scope: StoreScope) -> StoreConfiguration {
        configurations.first { $0.scope == scope }!
    }

    /// Whether some to-one relationship has a to-one inverse (saves then keep both sides).
    var hasOneToOnePairs: Bool {
        entities.contains { source in
            source.toOneRelationships.contains { relationship in
                guard let inverse = relationship.inverse else { return false }
                return entity(named: relationship.destination)?.relationship(inverse)?.toMany == false
            }
        }
    }

    /// What the model asks for that the service cannot keep (an ordered relationship, a
    /// uniqueness constraint), naming the entity and property; nil when there is none. Start-up
    /// refuses these after the CloudKit check, so that `--check-model` gives Apple's reason.
    public func unsupportedFeatures() -> String? {
        for entity in entities {
            if let constraint = entity.uniquenessConstraints.first {
                return "\(entity.name): uniqueness constraints (\(constraint.joined(separator: ", "))) are not supported yet."
            }
            if let relationship = entity.relationships.first(where: \.ordered) {
                return "\(entity.name).\(relationship.name): ordered relationships are not supported yet."
            }
        }
        return nil
    }
}

/// Which entities a store holds (Core Data's model configurations).
public struct StoreConfiguration: Sendable, Codable, Hashable {
    public var name: String
    public var scope: StoreScope
    public var entities: [String]
    /// Xcode's "Used with CloudKit": the model compiler then holds these entities to CloudKit's
    /// rules, so a model marked so that breaks them does not load, mirrored or not.
    public var usedWithCloudKit: Bool?

    public init(name: String, scope: StoreScope, entities: [String], usedWithCloudKit: Bool? = nil) {
        self.name = name
        self.scope = scope
        self.entities = entities
        self.usedWithCloudKit = usedWithCloudKit
    }
}

/// One entity. A class with its derived tables computed once at load: saves and fetches ask
/// for an entity's stored properties and positions for every object they touch.
public final class EntityDescription: Sendable, Codable {
    public let name: String
    public let attributes: [AttributeDescription]
    public let relationships: [RelationshipDescription]
    /// Extra SQLite indexes, each a list of attribute or to-one relationship names.
    public let indexes: [[String]]
    /// The entity's name in an earlier model version (Core Data's renaming identifier).
    public let renamingIdentifier: String?
    /// Core Data's version hash modifier: a change of it makes a new version of the entity.
    public let versionHashModifier: String?
    /// Xcode's Constraints: each a list of properties unique together. Read so that the CloudKit
    /// check can give Apple's reason; the service keeps no constraint, so a model with one is
    /// refused at load (`unsupportedFeatures`).
    public let uniquenessConstraints: [[String]]
    public let toOneRelationships: [RelationshipDescription]
    /// Attribute names, then to-one relationship names: the properties a row stores, in the
    /// order of a row's values and of a context object's value arrays.
    public let storedPropertyNames: [String]
    /// Stored property name → its position in `storedPropertyNames`.
    private let positions: [String: Int]
    /// Positions of the stored properties a save requires (non-optional attributes, then
    /// to-one relationships), in order: every save checks them for every object it writes.
    public let requiredPositions: [Int]
    /// `attributes` as their values are converted and validated, by position.
    package let attributeRules: [AttributeRule]

    enum CodingKeys: String, CodingKey {
        case name, attributes, relationships, indexes, renamingIdentifier, versionHashModifier, uniquenessConstraints
    }

    public init(name: String, attributes: [AttributeDescription], relationships: [RelationshipDescription], indexes: [[String]] = [],
                renamingIdentifier: String? = nil, versionHashModifier: String? = nil, uniquenessConstraints: [[String]] = []) {
        self.uniquenessConstraints = uniquenessConstraints
        self.name = name
        self.attributes = attributes
        attributeRules = attributes.map(AttributeRule.init)
        self.relationships = relationships
        self.indexes = indexes
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        toOneRelationships = relationships.filter { !$0.toMany }
        storedPropertyNames = attributes.map(\.name) + toOneRelationships.map(\.name)
        var positions: [String: Int] = [:]
        for (position, name) in storedPropertyNames.enumerated() where positions[name] == nil { positions[name] = position }
        self.positions = positions
        let toOne = relationships.filter { !$0.toMany }
        requiredPositions = attributes.indices.filter { !attributes[$0].optional }
            + toOne.indices.filter { !toOne[$0].optional }.map { attributes.count + $0 }
    }

    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try container.decode(String.self, forKey: .name),
                  attributes: try container.decodeIfPresent([AttributeDescription].self, forKey: .attributes) ?? [],
                  relationships: try container.decodeIfPresent([RelationshipDescription].self, forKey: .relationships) ?? [],
                  indexes: try container.decodeIfPresent([[String]].self, forKey: .indexes) ?? [],
                  renamingIdentifier: try container.decodeIfPresent(String.self, forKey: .renamingIdentifier),
                  versionHashModifier: try container.decodeIfPresent(String.self, forKey: .versionHashModifier),
                  uniquenessConstraints: try container.decodeIfPresent([[String]].self, forKey: .uniquenessConstraints) ?? [])
    }

    public func attribute(_ name: String) -> AttributeDescription? { attributes.first { $0.name == name } }
    public func relationship(_ name: String) -> RelationshipDescription? { relationships.first { $0.name == name } }
    /// The position of a stored property (attribute or to-one relationship), nil otherwise.
    public func position(of name: String) -> Int? { positions[name] }
    /// The position of the i-th to-one relationship among the stored properties.
    public func position(ofToOne index: Int) -> Int { attributes.count + index }
}

/// Core Data's attribute types. `integer` is Integer 64 (the name predates the others).
public enum AttributeType: String, Sendable, Codable, CaseIterable {
    case string, integer, double, boolean, date
    case integer16, integer32, float, decimal, binary, uuid, uri, transformable

    /// The whole-number types and their ranges (Integer 16, 32, 64).
    var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: return Int64(Int16.min)...Int64(Int16.max)
        case .integer32: return Int64(Int32.min)...Int64(Int32.max)
        case .integer: return Int64.min...Int64.max
        default: return nil
        }
    }

    /// Types whose values are bytes (base64 on the wire, BLOB in SQLite, bytes or an asset in a record).
    package var isData: Bool { self == .binary || self == .transformable }
    var isNumeric: Bool { integerRange != nil || self == .double || self == .float || self == .decimal }
}

public struct AttributeDescription: Sendable, Codable {
    public var name: String
    public var type: AttributeType
    public var optional: Bool
    public var defaultValue: JSONValue?
    /// For strings: the only values accepted (MeowCare's event types).
    public var allowedValues: [String]?
    /// Kept in the history tombstone when the object is deleted (Core Data's option of that name).
    public var preservesValueInHistoryOnDeletion: Bool
    /// The attribute's name in an earlier model version (Core Data's renaming identifier).
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    /// Core Data's validation: numbers' and dates' bounds (a date as ISO-8601 text, a decimal
    /// as text or a number), strings' lengths and pattern (matched against the whole string).
    public var constraints = AttributeConstraints()
    /// Binary Data's "Allows External Storage" (kept for the model; the store keeps bytes inline).
    public var allowsExternalBinaryDataStorage: Bool
    /// Transformable's transformer (values travel as the transformed data).
    public var valueTransformerName: String?

    enum CodingKeys: String, CodingKey {
        case name, type, optional, defaultValue, allowedValues, preservesValueInHistoryOnDeletion, renamingIdentifier, versionHashModifier
        case minValue, maxValue, minLength, maxLength, regularExpression, allowsExternalBinaryDataStorage, valueTransformerName
    }

    public init(name: String, type: AttributeType, optional: Bool = true) {
        self.name = name
        self.type = type
        self.optional = optional
        self.allowedValues = nil
        self.defaultValue = nil
        self.preservesValueInHistoryOnDeletion = false
        self.allowsExternalBinaryDataStorage = false
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        type = try container.decode(AttributeType.self, forKey: .type)
        optional = try container.decodeIfPresent(Bool.self, forKey: .optional) ?? true
        defaultValue = try container.decodeIfPresent(JSONValue.self, forKey: .defaultValue)
        allowedValues = try container.decodeIfPresent([String].self, forKey: .allowedValues)
        preservesValueInHistoryOnDeletion = try container.decodeIfPresent(Bool.self, forKey: .preservesValueInHistoryOnDeletion) ?? false
        renamingIdentifier = try container.decodeIfPresent(String.self, forKey: .renamingIdentifier)
        versionHashModifier = try container.decodeIfPresent(String.self, forKey: .versionHashModifier)
        constraints = AttributeConstraints(
            minValue: try container.decodeIfPresent(JSONValue.self, forKey: .minValue),
            maxValue: try container.decodeIfPresent(JSONValue.self, forKey: .maxValue),
            minLength: try container.decodeIfPresent(Int.self, forKey: .minLength),
            maxLength: try container.decodeIfPresent(Int.self, forKey: .maxLength),
            regularExpression: try container.decodeIfPresent(String.self, forKey: .regularExpression))
        allowsExternalBinaryDataStorage = try container.decodeIfPresent(Bool.self, forKey: .allowsExternalBinaryDataStorage) ?? false
        valueTransformerName = try container.decodeIfPresent(String.self, forKey: .valueTransformerName)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(type, forKey: .type)
        try container.encode(optional, forKey: .optional)
        try container.encodeIfPresent(defaultValue, forKey: .defaultValue)
        try container.encodeIfPresent(allowedValues, forKey: .allowedValues)
        try container.encode(preservesValueInHistoryOnDeletion, forKey: .preservesValueInHistoryOnDeletion)
        try container.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        try container.encodeIfPresent(versionHashModifier, forKey: .versionHashModifier)
        try container.encodeIfPresent(constraints.minValue, forKey: .minValue)
        try container.encodeIfPresent(constraints.maxValue, forKey: .maxValue)
        try container.encodeIfPresent(constraints.minLength, forKey: .minLength)
        try container.encodeIfPresent(constraints.maxLength, forKey: .maxLength)
        try container.encodeIfPresent(constraints.regularExpression, forKey: .regularExpression)
        if allowsExternalBinaryDataStorage { try container.encode(true, forKey: .allowsExternalBinaryDataStorage) }
        try container.encodeIfPresent(valueTransformerName, forKey: .valueTransformerName)
    }
}

/// An attribute's validation settings (Xcode's Validation section of the attribute inspector).
public struct AttributeConstraints: Sendable, Equatable {
    public var minValue: JSONValue?
    public var maxValue: JSONValue?
    public var minLength: Int?
    public var maxLength: Int?
    public var regularExpression: String?

    public init(minValue: JSONValue? = nil, maxValue: JSONValue? = nil, minLength: Int? = nil, maxLength: Int? = nil,
                regularExpression: String? = nil) {
        self.minValue = minValue
        self.maxValue = maxValue
        self.minLength = minLength
        self.maxLength = maxLength
        self.regularExpression = regularExpression
    }

    var isEmpty: Bool { self == AttributeConstraints() }
}

public enum DeleteRule: String, Sendable, Codable {
    case nullify, cascade, deny
}

public struct RelationshipDescription: Sendable, Codable {
    public var name: String
    public var destination: String
    public var toMany: Bool
    public var inverse: String?
    public var deleteRule: DeleteRule
    public var optional: Bool
    /// The relationship's name in an earlier model version (Core Data's renaming identifier).
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    /// A to-many relationship's Minimum and Maximum Count (Core Data's 1580 and 1590 at save).
    public var minCount: Int?
    public var maxCount: Int?
    /// Xcode's Ordered: read so that the CloudKit check can give Apple's reason; the service
    /// keeps no order, so a model with one is refused at load.
    public var ordered: Bool = false

    enum CodingKeys: String, CodingKey {
        case name, destination, toMany, inverse, deleteRule, optional, renamingIdentifier, versionHashModifier, minCount, maxCount, ordered
    }

    public init(name: String, destination: String, toMany: Bool = false, inverse: String? = nil, deleteRule: DeleteRule = .nullify,
                optional: Bool = true) {
        self.name = name
        self.destination = destination
        self.toMany = toMany
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.optional = optional
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        destination = try container.decode(String.self, forKey: .destination)
        toMany = try container.decodeIfPresent(Bool.self, forKey: .toMany) ?? false
        inverse = try container.decodeIfPresent(String.self, forKey: .inverse)
        deleteRule = try container.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify
        optional = try container.decodeIfPresent(Bool.self, forKey: .optional) ?? true
        renamingIdentifier = try container.decodeIfPresent(String.self, forKey: .renamingIdentifier)
        versionHashModifier = try container.decodeIfPresent(String.self, forKey: .versionHashModifier)
        minCount = try container.decodeIfPresent(Int.self, forKey: .minCount)
        maxCount = try container.decodeIfPresent(Int.self, forKey: .maxCount)
        ordered = try container.decodeIfPresent(Bool.self, forKey: .ordered) ?? false
    }

    /// Whether saves check this relationship's count.
    var isCounted: Bool { toMany && (minCount ?? 0 > 0 || maxCount ?? 0 > 0) }
}

/// The orphan repair: every `childEntity` whose to-one `relationship` is nil is attached to the
/// default `parentEntity` (the one whose `defaultFlag` attribute is true), created if missing.
public struct OrphanRepairRule: Sendable, Codable {
    public var childEntity: String
    public var relationship: String
    public var parentEntity: String
    public var defaultFlag: String
    /// Values for a newly created default parent (the flag is set to true on top).
    public var defaultValues: [String: JSONValue]

    /// `defaultValues` read as one JSON value: decoded as a Swift dictionary, its keys had the
    /// runtime scan every conformance record of the process at each start (~0.2 ms).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        childEntity = try container.decode(String.self, forKey: .childEntity)
        relationship = try container.decode(String.self, forKey: .relationship)
        parentEntity = try container.decode(String.self, forKey: .parentEntity)
        defaultFlag = try container.decode(String.self, forKey: .defaultFlag)
        if case let .object(values) = try container.decode(JSONValue.self, forKey: .defaultValues) {
            defaultValues = values
        } else {
            // Not an object: the dictionary's own decoding throws the error it always did.
            defaultValues = try container.decode([String: JSONValue].self, forKey: .defaultValues)
        }
    }
}

/// A model file that cannot be used, with the place of the problem.
public struct ModelError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

