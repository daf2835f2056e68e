import MeowWire
import ServiceRuntime
import SQLiteKit

/// A many-to-many value sent with an object's values: set after the object is registered.
typealias ManyToManyValue = (key: String, value: JSONValue, end: ManyToManyEnd)

/// Checks and converts the values a client sends for an object into storage form by position.
/// It reads only the model, so a batch's halves can each convert with their own converter on
/// their own core. What it keeps between calls is what makes a batch cheap: a batch's objects
/// send the same keys in the same order (each key is compared with the one before it rather
/// than hashed) and usually point at one parent (parsed once).
struct ValueConverter {
    private var lastKeys: (entity: EntityDescription, keys: [String], positions: [Int])?
    private var lastTarget: (uri: String, id: ObjectID)?

    /// Hands each stored property's storage value to `apply` by position (in the order given;
    /// a later value of a position replaces an earlier one) and returns the many-to-many values.
    /// A to-one value naming a temporary ID goes to `temporaryTarget` (which throws when the
    /// context does not hold it), in its place among the values' checks.
    mutating func convert(_ values: some Sequence<(key: String, value: JSONValue)>, entity: EntityDescription, model: ManagedObjectModel,
                          temporaryTarget: (String) throws -> Void, apply: (Int, SQLValue) -> Void) throws -> [ManyToManyValue] {
        var manyToMany: [ManyToManyValue] = []
        var keys: [String] = [], positions: [Int] = []
        if let lastKeys, lastKeys.entity === entity { (keys, positions) = (lastKeys.keys, lastKeys.positions) }
        lastKeys = nil
        defer { lastKeys = (entity, keys, positions) }
        let rules = entity.attributeRules
        var index = 0
        for (key, value) in values {
            defer { index += 1 }
            let known: Int
            if index < keys.count, keys[index] == key {
                known = positions[index]
            } else {
                known = entity.position(of: key) ?? -1
                if index < keys.count { (keys[index], positions[index]) = (key, known) } else { keys.append(key); positions.append(known) }
            }
            guard known >= 0 else {
                if let end = model.manyToMany(entity.name, key) {
                    manyToMany.append((key, value, end))
                    continue
                }
                if let relationship = entity.relationship(key), relationship.toMany {
                    throw ServiceError(.invalidField, "\(entity.name).\(key) is to-many; set its inverse \(relationship.destination).\(relationship.inverse ?? "?") on each destination object instead.",
                                       details: ["entity": .string(entity.name), "property": .string(key)])
                }
                throw StoreError.unknownProperty(key, entity: entity)
            }
            let position = known
            if position < rules.count {
                apply(position, try AttributeCoding.storageValue(value, for: rules[position], entity: entity.name))
                continue
            }
            // The destination's name only: binding the whole description would copy it.
            let destination = entity.toOneRelationships[position - rules.count].destination
            if value == .null { apply(position, .null); continue }
            guard let text = value.stringValue, let target = parsedTarget(text) else {
                throw StoreError.invalidValue(entity: entity.name, property: key, "expected an object ID string or null, got \(AttributeCoding.describe(value)).")
            }
            guard target.entity == destination else {
                throw StoreError.invalidValue(entity: entity.name, property: key, "expected a \(destination) object ID, got a \(target.entity).")
            }
            if target.isTemporary { try temporaryTarget(text) }
            apply(position, .text(text))
        }
        return manyToMany
    }

    private mutating func parsedTarget(_ uri: String) -> ObjectID? {
        if let lastTarget, lastTarget.uri == uri { return lastTarget.id }
        guard let id = ObjectID(uri: uri) else { return nil }
        lastTarget = (uri, id)
        return id
    }
}

/// The model's default values of each entity in storage form by position (checked when the
/// model loaded), made once per entity.
struct EntityDefaults {
    private var byEntity: [String: [SQLValue]] = [:]
    /// The last entity's: a batch is usually of one entity.
    private var last: (entity: EntityDescription, values: [SQLValue])?

    mutating func of(_ entity: EntityDescription) -> [SQLValue] {
        if let last, last.entity === entity { return last.values }
        if let cached = byEntity[entity.name] {
            last = (entity, cached)
            return cached
        }
        var defaults = Array(repeating: SQLValue.null, count: entity.storedPropertyNames.count)
        for (position, rule) in entity.attributeRules.enumerated() {
            defaults[position] = rule.attribute.defaultValue.flatMap { try? AttributeCoding.storageValue($0, for: rule, entity: entity.name) } ?? .null
        }
        byEntity[entity.name] = defaults
        last = (entity, defaults)
        return defaults
    }
}
