import FoundationEssentials
import MeowWire
import ServiceRuntime

extension ManagedObjectModel {
    /// Decodes and validates a model file.
    public static func load(json: Data) throws(ModelError) -> ManagedObjectModel {
        try load(bytes: [UInt8](json))
    }

    /// Decodes and validates a model's JSON text given as its bytes.
    static func load(bytes json: [UInt8]) throws(ModelError) -> ManagedObjectModel {
        let model: ManagedObjectModel
        do {
            // Read without Codable when the reader takes the text; the Decodable forms decide
            // (and word the refusal) where it gives up.
            model = try ModelReading.read(json) ?? JSONValueDecoder().decode(ManagedObjectModel.self, from: json)
        } catch let error as DecodingError {
            throw ModelError("The model file is not a valid model: \(Self.describe(error, in: json)).")
        } catch {
            throw ModelError("The model file is not a valid model: \(error).")
        }
        try model.validate()
        return try model.addingManyToManyLinks()
    }

    /// The decoding error with its JSON path, led by the entity and property it is in when the
    /// path goes through one (`CareEvent.id: …`), so the author finds the place by name.
    private static func describe(_ error: DecodingError, in json: [UInt8]) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            let text = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return text.isEmpty ? "the top level" : String(text.drop { $0 == "." })
        }
        let keys: [any CodingKey]
        let detail: String
        switch error {
        case let .keyNotFound(key, context):
            keys = context.codingPath
            detail = "missing key '\(key.stringValue)' at \(path(context.codingPath))"
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
            keys = context.codingPath
            detail = "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
        return placeName(keys, in: json).map { "\($0): \(detail)" } ?? detail
    }

    /// `Entity` or `Entity.property` for a coding path into `entities[i]` (and its
    /// `attributes[j]` or `relationships[j]`), read from the file's own names.
    private static func placeName(_ keys: [any CodingKey], in json: [UInt8]) -> String? {
        func element(_ list: JSONValue?, _ index: Int?) -> JSONValue? {
            guard let items = list?.arrayValue, let index, items.indices.contains(index) else { return nil }
            return items[index]
        }
        guard keys.count >= 2, keys[0].stringValue == "entities", let tree = try? JSONParser.parse(json),
              let entity = element(tree["entities"], keys[1].intValue), let entityName = entity["name"]?.stringValue else { return nil }
        guard keys.count >= 4, ["attributes", "relationships"].contains(keys[2].stringValue),
              let propertyName = element(entity[keys[2].stringValue], keys[3].intValue)?["name"]?.stringValue else { return entityName }
        return "\(entityName).\(propertyName)"
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, first == UInt8(ascii: "_") || (first | 0x20) >= UInt8(ascii: "a") && (first | 0x20) <= UInt8(ascii: "z") else { return false }
        return name.utf8.count <= 64 && name.utf8.allSatisfy {
            $0 == UInt8(ascii: "_") || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || (($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z"))
        }
    }

    /// Checks names, types, relationships and configurations; the message names the problem.
    /// The checks run in a fixed order and the first problem found is the one reported.
    public func validate() throws(ModelError) {
        guard Self.isIdentifier(name) else { throw ModelError("Model name '\(name)' must be letters, digits and _ (it names the store files).") }
        guard !entities.isEmpty else { throw ModelError("Model '\(name)' has no entities.") }
        var seen: Set<String> = []
        for entity in entities {
            guard Self.isIdentifier(entity.name) else { throw ModelError("Entity name '\(entity.name)' must be letters, digits and _.") }
            guard seen.insert(entity.name).inserted else { throw ModelError("Entity '\(entity.name)' is defined twice.") }
            try validateProperties(of: entity)
        }
        // Every relationship's destination is checked before any inverse or index, so a missing
        // entity is what a model with both kinds of problem reports.
        for entity in entities {
            try validateDestinations(of: entity)
        }
        for entity in entities {
            try validateInverses(of: entity)
            try validateIndexes(of: entity)
        }
        try validateConfigurations()
        if let rule = orphanRepair { try validateOrphanRepair(rule) }
    }

    /// An entity's attributes, then its relationships. They share one set of names: a
    /// relationship may not take an attribute's name.
    private func validateProperties(of entity: EntityDescription) throws(ModelError) {
        var properties: Set<String> = []
        for attribute in entity.attributes {
            guard Self.isIdentifier(attribute.name) else { throw ModelError("\(entity.name): attribute name '\(attribute.name)' must be letters, digits and _.") }
            guard properties.insert(attribute.name).inserted else { throw ModelError("\(entity.name).\(attribute.name) is defined twice.") }
            try validateAttributeSettings(attribute, of: entity)
        }
        for relationship in entity.relationships {
            if (relationship.minCount != nil || relationship.maxCount != nil) && !relationship.toMany {
                throw ModelError("\(entity.name).\(relationship.name): minCount and maxCount are for to-many relationships.")
            }
            if let minimum = relationship.minCount, let maximum = relationship.maxCount, minimum > maximum {
                throw ModelError("\(entity.name).\(relationship.name): minCount \(minimum) is more than maxCount \(maximum).")
            }
            guard Self.isIdentifier(relationship.name) else { throw ModelError("\(entity.name): relationship name '\(relationship.name)' must be letters, digits and _.") }
            guard properties.insert(relationship.name).inserted else { throw ModelError("\(entity.name).\(relationship.name) is defined twice.") }
        }
    }

    /// An attribute's settings, its default value (which must be storable as its type) and
    /// `allowedValues` (string attributes only).
    private func validateAttributeSettings(_ attribute: AttributeDescription, of entity: EntityDescription) throws(ModelError) {
        try AttributeSettingsCheck.check(attribute, entity: entity.name)
        if let value = attribute.defaultValue, value != .null {
            do { _ = try AttributeCoding.storageValue(value, for: attribute, entity: entity.name) } catch {
                let why = (error as? ServiceError).map { " (\($0.wire.message))" } ?? ""
                throw ModelError("\(entity.name).\(attribute.name): the default value \(JSONWriter.text(value)) is not a valid \(attribute.type.rawValue)\(why).")
            }
        }
        if attribute.allowedValues != nil, attribute.type != .string {
            throw ModelError("\(entity.name).\(attribute.name): allowedValues is only for string attributes.")
        }
    }

    /// Each relationship of the entity leads to an entity of the model.
    private func validateDestinations(of entity: EntityDescription) throws(ModelError) {
        for relationship in entity.relationships where self.entity(named: relationship.destination) == nil {
            throw ModelError("\(entity.name).\(relationship.name): destination entity '\(relationship.destination)' is not in the model.")
        }
    }

    /// Each relationship's inverse, when it names one, is a relationship of the destination that
    /// names it back; a to-many relationship must have one.
    private func validateInverses(of entity: EntityDescription) throws(ModelError) {
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
        }
    }

    /// Each index column is an attribute or a to-one relationship of the entity.
    private func validateIndexes(of entity: EntityDescription) throws(ModelError) {
        for index in entity.indexes {
            for column in index where entity.attribute(column) == nil && entity.relationship(column).map({ $0.toMany }) != false {
                throw ModelError("\(entity.name): index column '\(column)' is not an attribute or to-one relationship.")
            }
        }
    }

    /// Exactly two configurations, one private and one shared, with good and different names,
    /// listing only entities of the model.
    private func validateConfigurations() throws(ModelError) {
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
    }

    /// The orphan repair rule's child entity, its to-one relationship to the parent, the
    /// parent's boolean default flag and the default values for the parent's attributes.
    private func validateOrphanRepair(_ rule: OrphanRepairRule) throws(ModelError) {
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
