import FoundationEssentials
import MeowWire

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
    /// The start-up repair of seed 000 (MeowCare: CareEvents without a session), if the app has one.
    public var orphanRepair: OrphanRepairRule?

    public func entity(named name: String) -> EntityDescription? {
        entities.first { $0.name == name }
    }

    public func configuration(scope: StoreScope) -> StoreConfiguration {
        configurations.first { $0.scope == scope }!
    }
}

public enum StoreScope: String, Sendable, Codable, Hashable {
    case `private`, shared
}

/// Which entities a store holds (Core Data's model configurations).
public struct StoreConfiguration: Sendable, Codable, Hashable {
    public var name: String
    public var scope: StoreScope
    public var entities: [String]
}

/// One entity. A class with its derived tables computed once at load: saves and fetches ask
/// for an entity's stored properties and positions for every object they touch.
public final class EntityDescription: Sendable, Codable {
    public let name: String
    public let attributes: [AttributeDescription]
    public let relationships: [RelationshipDescription]
    /// Extra SQLite indexes, each a list of attribute or to-one relationship names.
    public let indexes: [[String]]
    /// The entity's name in an earlier model version (Core Data's renaming identifier): a store
    /// written by that version has its table renamed on open.
    public let renamingIdentifier: String?
    public let toOneRelationships: [RelationshipDescription]
    /// Attribute names, then to-one relationship names: the properties a row stores, in the
    /// order of a row's values and of a context object's value arrays.
    public let storedPropertyNames: [String]
    /// Stored property name → its position in `storedPropertyNames`.
    private let positions: [String: Int]

    enum CodingKeys: String, CodingKey { case name, attributes, relationships, indexes, renamingIdentifier }

    public required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        attributes = try container.decodeIfPresent([AttributeDescription].self, forKey: .attributes) ?? []
        relationships = try container.decodeIfPresent([RelationshipDescription].self, forKey: .relationships) ?? []
        indexes = try container.decodeIfPresent([[String]].self, forKey: .indexes) ?? []
        renamingIdentifier = try container.decodeIfPresent(String.self, forKey: .renamingIdentifier)
        toOneRelationships = relationships.filter { !$0.toMany }
        storedPropertyNames = attributes.map(\.name) + toOneRelationships.map(\.name)
        var positions: [String: Int] = [:]
        for (position, name) in storedPropertyNames.enumerated() where positions[name] == nil { positions[name] = position }
        self.positions = positions
    }

    public func attribute(_ name: String) -> AttributeDescription? { attributes.first { $0.name == name } }
    public func relationship(_ name: String) -> RelationshipDescription? { relationships.first { $0.name == name } }
    /// The position of a stored property (attribute or to-one relationship), nil otherwise.
    public func position(of name: String) -> Int? { positions[name] }
    /// The position of the i-th to-one relationship among the stored properties.
    public func position(ofToOne index: Int) -> Int { attributes.count + index }
}

public enum AttributeType: String, Sendable, Codable, CaseIterable {
    case string, integer, double, boolean, date
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
    /// The attribute's name in an earlier model version: its column is renamed on open.
    public var renamingIdentifier: String?

    enum CodingKeys: String, CodingKey { case name, type, optional, defaultValue, allowedValues, preservesValueInHistoryOnDeletion, renamingIdentifier }

    public init(name: String, type: AttributeType, optional: Bool = true) {
        self.name = name
        self.type = type
        self.optional = optional
        self.allowedValues = nil
        self.defaultValue = nil
        self.preservesValueInHistoryOnDeletion = false
        self.renamingIdentifier = nil
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
    }
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
    /// The relationship's name in an earlier model version: its column is renamed on open.
    public var renamingIdentifier: String?

    enum CodingKeys: String, CodingKey { case name, destination, toMany, inverse, deleteRule, optional, renamingIdentifier }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        destination = try container.decode(String.self, forKey: .destination)
        toMany = try container.decodeIfPresent(Bool.self, forKey: .toMany) ?? false
        inverse = try container.decodeIfPresent(String.self, forKey: .inverse)
        deleteRule = try container.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify
        optional = try container.decodeIfPresent(Bool.self, forKey: .optional) ?? true
        renamingIdentifier = try container.decodeIfPresent(String.self, forKey: .renamingIdentifier)
    }
}

/// Seed 000's repair: every `childEntity` whose to-one `relationship` is nil is attached to the
/// default `parentEntity` (the one whose `defaultFlag` attribute is true), created if missing.
public struct OrphanRepairRule: Sendable, Codable {
    public var childEntity: String
    public var relationship: String
    public var parentEntity: String
    public var defaultFlag: String
    /// Values for a newly created default parent (the flag is set to true on top).
    public var defaultValues: [String: JSONValue]
}

/// A model file that cannot be used, with the place of the problem.
public struct ModelError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension ManagedObjectModel {
    /// Decodes and validates a model file.
    public static func load(json: Data) throws(ModelError) -> ManagedObjectModel {
        let model: ManagedObjectModel
        do {
            model = try JSONDecoder().decode(ManagedObjectModel.self, from: json)
        } catch let error as DecodingError {
            throw ModelError("The model file is not a valid model: \(Self.describe(error)).")
        } catch {
            throw ModelError("The model file is not a valid model: \(error).")
        }
        try model.validate()
        return model
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case let .keyNotFound(key, context): return "missing key '\(key.stringValue)' at \(path(context.codingPath).isEmpty ? "the top level" : path(context.codingPath))"
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
            return "\(path(context.codingPath).isEmpty ? "the top level" : path(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, first == UInt8(ascii: "_") || (first | 0x20) >= UInt8(ascii: "a") && (first | 0x20) <= UInt8(ascii: "z") else { return false }
        return name.utf8.count <= 64 && name.utf8.allSatisfy {
            $0 == UInt8(ascii: "_") || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || (($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z"))
        }
    }

    /// Checks names, types, relationships and configurations; the message names the problem.
    public func validate() throws(ModelError) {
        guard Self.isIdentifier(name) else { throw ModelError("Model name '\(name)' must be letters, digits and _ (it names the store files).") }
        guard !entities.isEmpty else { throw ModelError("Model '\(name)' has no entities.") }
        var seen: Set<String> = []
        for entity in entities {
            guard Self.isIdentifier(entity.name) else { throw ModelError("Entity name '\(entity.name)' must be letters, digits and _.") }
            guard seen.insert(entity.name).inserted else { throw ModelError("Entity '\(entity.name)' is defined twice.") }
            var properties: Set<String> = []
            for attribute in entity.attributes {
                guard Self.isIdentifier(attribute.name) else { throw ModelError("\(entity.name): attribute name '\(attribute.name)' must be letters, digits and _.") }
                guard properties.insert(attribute.name).inserted else { throw ModelError("\(entity.name).\(attribute.name) is defined twice.") }
                if let value = attribute.defaultValue, value != .null {
                    do { _ = try AttributeCoding.storageValue(value, for: attribute, entity: entity.name) } catch {
                        throw ModelError("\(entity.name).\(attribute.name): the default value \(value) is not a valid \(attribute.type.rawValue).")
                    }
                }
                if attribute.allowedValues != nil, attribute.type != .string {
                    throw ModelError("\(entity.name).\(attribute.name): allowedValues is only for string attributes.")
                }
            }
            for relationship in entity.relationships {
                guard Self.isIdentifier(relationship.name) else { throw ModelError("\(entity.name): relationship name '\(relationship.name)' must be letters, digits and _.") }
                guard properties.insert(relationship.name).inserted else { throw ModelError("\(entity.name).\(relationship.name) is defined twice.") }
            }
        }
        for entity in entities {
            for relationship in entity.relationships where self.entity(named: relationship.destination) == nil {
                throw ModelError("\(entity.name).\(relationship.name): destination entity '\(relationship.destination)' is not in the model.")
            }
        }
        for entity in entities {
            for relationship in entity.relationships {
                let place = "\(entity.name).\(relationship.name)"
                guard let destination = self.entity(named: relationship.destination) else {
                    throw ModelError("\(place): destination entity '\(relationship.destination)' is not in the model.")
                }
                guard let inverseName = relationship.inverse else {
                    if relationship.toMany { throw ModelError("\(place): a to-many relationship needs an inverse to-one relationship on \(destination.name).") }
                    continue
                }
                guard let inverse = destination.relationship(inverseName) else {
                    throw ModelError("\(place): inverse '\(inverseName)' is not a relationship of \(destination.name).")
                }
                guard inverse.inverse == relationship.name, inverse.destination == entity.name else {
                    throw ModelError("\(place): its inverse \(destination.name).\(inverseName) must name \(entity.name).\(relationship.name) as its inverse.")
                }
                if relationship.toMany && inverse.toMany {
                    throw ModelError("\(place): many-to-many relationships are not supported; model a join entity instead.")
                }
                if !relationship.toMany && !inverse.toMany {
                    throw ModelError("\(place): one-to-one relationships with an inverse are not supported; make one side to-many or drop the inverse.")
                }
            }
            for index in entity.indexes {
                for column in index where entity.attribute(column) == nil && entity.relationship(column).map({ $0.toMany }) != false {
                    throw ModelError("\(entity.name): index column '\(column)' is not an attribute or to-one relationship.")
                }
            }
        }
        let scopes = configurations.map(\.scope)
        guard scopes.filter({ $0 == .private }).count == 1, scopes.filter({ $0 == .shared }).count == 1, configurations.count == 2 else {
            throw ModelError("The model needs exactly two configurations: one with scope \"private\" and one with scope \"shared\".")
        }
        for configuration in configurations {
            guard Self.isIdentifier(configuration.name) else { throw ModelError("Configuration name '\(configuration.name)' must be letters, digits and _.") }
            for entityName in configuration.entities where self.entity(named: entityName) == nil {
                throw ModelError("Configuration \(configuration.name) lists entity '\(entityName)', which is not in the model.")
            }
        }
        guard configurations[0].name != configurations[1].name else { throw ModelError("The two configurations need different names (they name the store files).") }
        if let rule = orphanRepair {
            guard let child = entity(named: rule.childEntity) else { throw ModelError("orphanRepair.childEntity '\(rule.childEntity)' is not in the model.") }
            guard let relationship = child.relationship(rule.relationship), !relationship.toMany, relationship.destination == rule.parentEntity else {
                throw ModelError("orphanRepair.relationship must be a to-one relationship of \(rule.childEntity) to \(rule.parentEntity).")
            }
            guard let parent = entity(named: rule.parentEntity), parent.attribute(rule.defaultFlag)?.type == .boolean else {
                throw ModelError("orphanRepair.defaultFlag must be a boolean attribute of \(rule.parentEntity).")
            }
            for (key, value) in rule.defaultValues {
                guard let attribute = parent.attribute(key) else { throw ModelError("orphanRepair.defaultValues: \(rule.parentEntity) has no attribute '\(key)'.") }
                do { _ = try AttributeCoding.storageValue(value, for: attribute, entity: parent.name) } catch {
                    throw ModelError("orphanRepair.defaultValues.\(key): \(value) is not a valid \(attribute.type.rawValue).")
                }
            }
        }
    }
}
