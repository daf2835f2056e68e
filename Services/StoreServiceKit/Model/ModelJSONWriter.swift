import MeowWire

/// A model as JSON model text (what `--print-model` prints): one line per property, keys in
/// a fixed order, settings at their defaults left out. Any model, an Xcode model included,
/// prints as a JSON model that loads to the same model, so two models are the same when
/// their texts are.
extension ManagedObjectModel {
    /// The model as JSON model text (`ModelJSONWriter`).
    public var jsonText: String { ModelJSONWriter.text(self) }
}

enum ModelJSONWriter {
    static func text(_ model: ManagedObjectModel) -> String {
        var lines = ["{", "  \"name\": \(quoted(model.name)),", "  \"entities\": ["]
        // Link entities are the store's own (many-to-many tables), made again at every load.
        let entities = model.entities.filter { !model.isLinkEntity($0.name) }
        for (index, entity) in entities.enumerated() {
            lines += entityLines(entity)
            if index < entities.count - 1 { lines[lines.count - 1] += "," }
        }
        lines.append("  ],")
        lines.append("  \"configurations\": [")
        for (index, configuration) in model.configurations.enumerated() {
            var fields: [(String, JSONValue)] = [("name", .string(configuration.name)), ("scope", .string(configuration.scope.rawValue)),
                                                 ("entities", .array(configuration.entities.filter { !model.isLinkEntity($0) }.map { .string($0) }))]
            if let flag = configuration.usedWithCloudKit { fields.append(("usedWithCloudKit", .bool(flag))) }
            lines.append("    " + object(fields) + (index < model.configurations.count - 1 ? "," : ""))
        }
        lines.append("  ]" + (model.orphanRepair == nil ? "" : ","))
        if let rule = model.orphanRepair {
            lines.append("  \"orphanRepair\": " + object([
                ("childEntity", .string(rule.childEntity)), ("relationship", .string(rule.relationship)),
                ("parentEntity", .string(rule.parentEntity)), ("defaultFlag", .string(rule.defaultFlag)),
                ("defaultValues", .object(rule.defaultValues)),
            ]))
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    private static func entityLines(_ entity: EntityDescription) -> [String] {
        var parts: [[String]] = [["      \"name\": \(quoted(entity.name))"]]
        if let identifier = entity.renamingIdentifier { parts.append(["      \"renamingIdentifier\": \(quoted(identifier))"]) }
        if let modifier = entity.versionHashModifier { parts.append(["      \"versionHashModifier\": \(quoted(modifier))"]) }
        if !entity.attributes.isEmpty {
            parts.append(list("attributes", entity.attributes.map { object(attributeFields($0)) }))
        }
        if !entity.relationships.isEmpty {
            parts.append(list("relationships", entity.relationships.map { object(relationshipFields($0)) }))
        }
        if !entity.indexes.isEmpty {
            parts.append(["      \"indexes\": " + JSONWriter.text(.array(entity.indexes.map { .array($0.map { .string($0) }) }))])
        }
        if !entity.uniquenessConstraints.isEmpty {
            parts.append(["      \"uniquenessConstraints\": " + JSONWriter.text(.array(entity.uniquenessConstraints.map { .array($0.map { .string($0) }) }))])
        }
        var lines = ["    {"]
        for (index, part) in parts.enumerated() {
            var part = part
            if index < parts.count - 1 { part[part.count - 1] += "," }
            lines += part
        }
        lines.append("    }")
        return lines
    }

    private static func list(_ key: String, _ items: [String]) -> [String] {
        ["      \"\(key)\": ["] + items.enumerated().map { "        " + $1 + ($0 < items.count - 1 ? "," : "") } + ["      ]"]
    }

    static func attributeFields(_ attribute: AttributeDescription) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [("name", .string(attribute.name)), ("type", .string(attribute.type.rawValue))]
        if !attribute.optional { fields.append(("optional", false)) }
        if let value = attribute.defaultValue { fields.append(("defaultValue", value)) }
        if let allowed = attribute.allowedValues { fields.append(("allowedValues", .array(allowed.map { .string($0) }))) }
        if attribute.preservesValueInHistoryOnDeletion { fields.append(("preservesValueInHistoryOnDeletion", true)) }
        if let identifier = attribute.renamingIdentifier { fields.append(("renamingIdentifier", .string(identifier))) }
        if let modifier = attribute.versionHashModifier { fields.append(("versionHashModifier", .string(modifier))) }
        let constraints = attribute.constraints
        if let value = constraints.minValue { fields.append(("minValue", value)) }
        if let value = constraints.maxValue { fields.append(("maxValue", value)) }
        if let length = constraints.minLength { fields.append(("minLength", .int(length))) }
        if let length = constraints.maxLength { fields.append(("maxLength", .int(length))) }
        if let pattern = constraints.regularExpression { fields.append(("regularExpression", .string(pattern))) }
        if attribute.allowsExternalBinaryDataStorage { fields.append(("allowsExternalBinaryDataStorage", true)) }
        if let name = attribute.valueTransformerName { fields.append(("valueTransformerName", .string(name))) }
        return fields
    }

    static func relationshipFields(_ relationship: RelationshipDescription) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [("name", .string(relationship.name)), ("destination", .string(relationship.destination))]
        if relationship.toMany { fields.append(("toMany", true)) }
        if let inverse = relationship.inverse { fields.append(("inverse", .string(inverse))) }
        fields.append(("deleteRule", .string(relationship.deleteRule.rawValue)))
        if !relationship.optional { fields.append(("optional", false)) }
        if let count = relationship.minCount { fields.append(("minCount", .int(count))) }
        if let count = relationship.maxCount { fields.append(("maxCount", .int(count))) }
        if relationship.ordered { fields.append(("ordered", true)) }
        if let identifier = relationship.renamingIdentifier { fields.append(("renamingIdentifier", .string(identifier))) }
        if let modifier = relationship.versionHashModifier { fields.append(("versionHashModifier", .string(modifier))) }
        return fields
    }

    /// `{"a": 1, "b": "x"}`: keys in the given order, one space after each colon and comma.
    static func object(_ fields: [(String, JSONValue)]) -> String {
        "{" + fields.map { quoted($0.0) + ": " + value($0.1) }.joined(separator: ", ") + "}"
    }

    private static func value(_ value: JSONValue) -> String {
        switch value {
        case let .array(items): return "[" + items.map { self.value($0) }.joined(separator: ", ") + "]"
        case let .object(members): return object(members.keys.sorted().map { ($0, members[$0]!) })
        default: return JSONWriter.text(value)
        }
    }

    private static func quoted(_ text: String) -> String {
        var out = ""
        JSONWriter.appendString(text, to: &out)
        return out
    }
}
