import CloudWire
import FoundationEssentials
import MeowWire

/// Which two of an Xcode model's configurations the private and the shared store use
/// (`--configurations PRIVATE,SHARED`); `Default` is Core Data's configuration of every entity.
public struct ConfigurationChoice: Sendable, Equatable {
    public var privateName: String
    public var sharedName: String

    public init(privateName: String, sharedName: String) {
        self.privateName = privateName
        self.sharedName = sharedName
    }

    public static let defaultName = "Default"
}

/// An Xcode model's contents as this service's model: Core Data's meaning of each XML value
/// (types, defaults, flags) and the two stores' configurations. Anything the service cannot
/// reproduce is refused here, naming the entity and property, rather than quietly dropped.
enum XcodeModelConversion {
    /// Seconds between 1970 and 2001, Core Data's reference date for stored dates.
    static let referenceDateOffset: Double = 978_307_200

    static func model(_ contents: XcodeModelContents, name: String, choice: ConfigurationChoice?) throws(ModelError) -> ManagedObjectModel {
        var entities: [EntityDescription] = []
        for entity in contents.entities {
            entities.append(try convert(entity))
        }
        let configurations = try storeConfigurations(contents, entityNames: contents.entities.map(\.name), choice: choice)
        return ManagedObjectModel(name: name, entities: entities, configurations: configurations, orphanRepair: nil)
    }

    private static func convert(_ entity: XcodeModelContents.Entity) throws(ModelError) -> EntityDescription {
        if let parent = entity.parentEntity {
            throw ModelError("\(entity.name): entity inheritance (parent entity \(parent)) is not supported; give \(entity.name) the parent's properties itself.")
        }
        if entity.isAbstract { throw ModelError("\(entity.name): abstract entities are not supported (no object of an abstract entity is ever stored).") }
        if let fetched = entity.fetchedProperties.first {
            throw ModelError("\(entity.name).\(fetched): fetched properties are not supported; fetch with a predicate instead.")
        }
        var attributes: [AttributeDescription] = []
        for attribute in entity.attributes { attributes.append(try convert(attribute, entity: entity.name)) }
        var relationships: [RelationshipDescription] = []
        for relationship in entity.relationships { relationships.append(try convert(relationship, entity: entity.name)) }
        return EntityDescription(name: entity.name, attributes: attributes, relationships: relationships, indexes: entity.fetchIndexes,
                                 renamingIdentifier: entity.renamingIdentifier, versionHashModifier: entity.versionHashModifier,
                                 uniquenessConstraints: entity.uniquenessConstraints)
    }

    private static func convert(_ attribute: XcodeModelContents.Attribute, entity: String) throws(ModelError) -> AttributeDescription {
        let place = "\(entity).\(attribute.name)"
        if attribute.transient { throw ModelError("\(place): transient attributes are not supported (they are never saved); make it persistent or remove it.") }
        if attribute.derived { throw ModelError("\(place): derived attributes are not supported; compute the value in the app.") }
        guard let xcodeType = attribute.attributeType, xcodeType != "Undefined" else {
            throw ModelError("\(place): the attribute has the Undefined type; give it a type.")
        }
        guard let type = attributeType(xcode: xcodeType) else {
            throw ModelError("\(place): unknown attribute type '\(xcodeType)'; the types are \(xcodeTypeNames.joined(separator: ", ")).")
        }
        var result = AttributeDescription(name: attribute.name, type: type, optional: attribute.optional)
        result.preservesValueInHistoryOnDeletion = attribute.preserveAfterDeletion
        result.renamingIdentifier = attribute.renamingIdentifier
        result.versionHashModifier = attribute.versionHashModifier
        result.defaultValue = try defaultValue(attribute, type: type, place: place)
        result.constraints = try XcodeAttributeSettings.constraints(attribute, type: type, place: place)
        result.allowsExternalBinaryDataStorage = attribute.allowsExternalBinaryDataStorage
        result.valueTransformerName = type == .transformable ? attribute.valueTransformerName : nil
        return result
    }

    /// Xcode's type names, as the `attributeType` of its XML spells them.
    static let xcodeTypeNames = ["Integer 16", "Integer 32", "Integer 64", "Decimal", "Double", "Float", "String", "Boolean", "Date",
                                 "Binary", "UUID", "URI", "Transformable"]

    static func attributeType(xcode name: String) -> AttributeType? {
        switch name {
        case "String": return .string
        case "Integer 16": return .integer16
        case "Integer 32": return .integer32
        case "Integer 64": return .integer
        case "Decimal": return .decimal
        case "Double": return .double
        case "Float": return .float
        case "Boolean": return .boolean
        case "Date": return .date
        case "Binary": return .binary
        case "UUID": return .uuid
        case "URI": return .uri
        case "Transformable": return .transformable
        default: return nil
        }
    }

    /// The default as this model's JSON writes it: numbers as numbers, flags as booleans,
    /// dates as ISO-8601 text (Xcode keeps them as seconds since 2001).
    private static func defaultValue(_ attribute: XcodeModelContents.Attribute, type: AttributeType, place: String) throws(ModelError) -> JSONValue? {
        if type == .date {
            guard let text = attribute.defaultDateTimeInterval else { return nil }
            guard let seconds = Double(text) else { throw ModelError("\(place): the default date '\(text)' is not a number of seconds since 2001.") }
            return .string(ISOTime.string(seconds: seconds + referenceDateOffset))
        }
        guard let text = attribute.defaultValueString else { return nil }
        func bad() -> ModelError { ModelError("\(place): the default value '\(text)' is not a valid \(attribute.attributeType ?? "value").") }
        switch type {
        case .string: return .string(text)
        case .boolean:
            switch text.lowercased() {
            case "yes", "true", "1": return .bool(true)
            case "no", "false", "0": return .bool(false)
            default: throw bad()
            }
        case .integer, .integer16, .integer32:
            guard let number = Int(text) else { throw bad() }
            return .int(number)
        case .double, .float:
            guard let number = Double(text) else { throw bad() }
            return .double(number)
        case .decimal, .uuid, .uri: return .string(text)
        case .date, .binary, .transformable: return nil
        }
    }

    private static func convert(_ relationship: XcodeModelContents.Relationship, entity: String) throws(ModelError) -> RelationshipDescription {
        let place = "\(entity).\(relationship.name)"
        if relationship.transient { throw ModelError("\(place): transient relationships are not supported; make it persistent or remove it.") }
        guard let destination = relationship.destinationEntity else { throw ModelError("\(place): the relationship has no destination entity.") }
        if let inverseEntity = relationship.inverseEntity, inverseEntity != destination {
            throw ModelError("\(place): its inverse is on \(inverseEntity), but its destination is \(destination).")
        }
        let rule: DeleteRule
        switch relationship.deletionRule ?? "Nullify" {
        case "Nullify": rule = .nullify
        case "Cascade": rule = .cascade
        case "Deny": rule = .deny
        case "No Action":
            throw ModelError("\(place): the No Action delete rule is not supported (it leaves the destination pointing at a deleted object); use Nullify.")
        case let other: throw ModelError("\(place): unknown delete rule '\(other)'; the rules are Nullify, Cascade, Deny.")
        }
        var result = RelationshipDescription(name: relationship.name, destination: destination, toMany: relationship.toMany,
                                             inverse: relationship.inverseName, deleteRule: rule, optional: relationship.optional)
        result.renamingIdentifier = relationship.renamingIdentifier
        result.versionHashModifier = relationship.versionHashModifier
        result.ordered = relationship.ordered
        if relationship.toMany {
            result.minCount = try count(relationship.minCount, place: place, key: "minCount")
            result.maxCount = try count(relationship.maxCount, place: place, key: "maxCount")
        }
        return result
    }

    /// Xcode writes no count as absent and "unbounded" as 0.
    private static func count(_ text: String?, place: String, key: String) throws(ModelError) -> Int? {
        guard let text else { return nil }
        guard let value = Int(text), value >= 0 else { throw ModelError("\(place): \(key) '\(text)' is not a count.") }
        return value == 0 ? nil : value
    }

    /// The private and the shared store's configurations: the ones `choice` names; else the
    /// model's configurations named Private and Shared; else, for a model with no configuration
    /// of its own, every entity in both (Apple's sharing sample loads its two stores so).
    static func storeConfigurations(_ contents: XcodeModelContents, entityNames: [String], choice: ConfigurationChoice?) throws(ModelError) -> [StoreConfiguration] {
        func named(_ name: String) -> XcodeModelContents.Configuration? {
            if let found = contents.configurations.first(where: { $0.name == name }) { return found }
            guard name == ConfigurationChoice.defaultName else { return nil }
            return .init(name: name, usedWithCloudKit: contents.usedWithCloudKit, entities: entityNames)
        }
        let names: (private: String, shared: String)
        if let choice {
            names = (choice.privateName, choice.sharedName)
        } else if contents.configurations.isEmpty {
            names = (ConfigurationChoice.defaultName, ConfigurationChoice.defaultName)
        } else if named("Private") != nil, named("Shared") != nil {
            names = ("Private", "Shared")
        } else {
            let listed = contents.configurations.map(\.name).joined(separator: ", ")
            throw ModelError("The model's configurations are \(listed): say which one the private store and which the shared store uses with --configurations PRIVATE,SHARED (\(ConfigurationChoice.defaultName) is every entity), or name them Private and Shared.")
        }
        let available = ([ConfigurationChoice.defaultName] + contents.configurations.map(\.name)).joined(separator: ", ")
        guard let privateConfiguration = named(names.private) else {
            throw ModelError("--configurations: the model has no configuration '\(names.private)' (it has \(available)).")
        }
        guard let sharedConfiguration = named(names.shared) else {
            throw ModelError("--configurations: the model has no configuration '\(names.shared)' (it has \(available)).")
        }
        // The store files are named by configuration: one configuration for both stores gives
        // them the names of their scopes.
        let same = privateConfiguration.name == sharedConfiguration.name
        return [
            StoreConfiguration(name: same ? "Private" : privateConfiguration.name, scope: .private, entities: privateConfiguration.entities,
                               usedWithCloudKit: privateConfiguration.usedWithCloudKit),
            StoreConfiguration(name: same ? "Shared" : sharedConfiguration.name, scope: .shared, entities: sharedConfiguration.entities,
                               usedWithCloudKit: sharedConfiguration.usedWithCloudKit),
        ]
    }
}

/// Xcode's validation settings of an attribute as constraints: `minValueString` and
/// `maxValueString` are a number's bounds and a string's lengths; dates' bounds are seconds
/// since 2001 (`minDateTimeInterval`, `maxDateTimeInterval`).
enum XcodeAttributeSettings {
    static func constraints(_ attribute: XcodeModelContents.Attribute, type: AttributeType, place: String) throws(ModelError) -> AttributeConstraints {
        var constraints = AttributeConstraints()
        constraints.regularExpression = attribute.regularExpressionString
        switch type {
        case .string, .uri:
            constraints.minLength = try length(attribute.minValueString, place: place, key: "minValueString")
            constraints.maxLength = try length(attribute.maxValueString, place: place, key: "maxValueString")
        case .integer, .integer16, .integer32, .double, .float:
            constraints.minValue = try number(attribute.minValueString, place: place, key: "minValueString")
            constraints.maxValue = try number(attribute.maxValueString, place: place, key: "maxValueString")
        case .decimal:
            constraints.minValue = attribute.minValueString.map { .string($0) }
            constraints.maxValue = attribute.maxValueString.map { .string($0) }
        case .date:
            constraints.minValue = try date(attribute.minDateTimeInterval, place: place, key: "minDateTimeInterval")
            constraints.maxValue = try date(attribute.maxDateTimeInterval, place: place, key: "maxDateTimeInterval")
        case .boolean, .binary, .transformable, .uuid:
            if attribute.minValueString != nil || attribute.maxValueString != nil {
                throw ModelError("\(place): minimum and maximum values are not supported on a \(type.rawValue) attribute; remove them.")
            }
        }
        return constraints
    }

    private static func length(_ text: String?, place: String, key: String) throws(ModelError) -> Int? {
        guard let text else { return nil }
        guard let value = Int(text), value >= 0 else { throw ModelError("\(place): \(key) '\(text)' is not a length.") }
        return value
    }

    private static func number(_ text: String?, place: String, key: String) throws(ModelError) -> JSONValue? {
        guard let text else { return nil }
        if let value = Int(text) { return .int(value) }
        guard let value = Double(text) else { throw ModelError("\(place): \(key) '\(text)' is not a number.") }
        return .double(value)
    }

    private static func date(_ text: String?, place: String, key: String) throws(ModelError) -> JSONValue? {
        guard let text else { return nil }
        guard let seconds = Double(text) else { throw ModelError("\(place): \(key) '\(text)' is not a number of seconds since 2001.") }
        return .string(ISOTime.string(seconds: seconds + XcodeModelConversion.referenceDateOffset))
    }
}
