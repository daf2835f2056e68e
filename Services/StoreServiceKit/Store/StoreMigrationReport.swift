import MeowWire

extension StoreMigration {
    /// What one store's migration did, as a person upgrading an app wants to read it: entities
    /// and properties added, renamed (by renaming identifier) and removed, and the rows each
    /// carried-over entity kept. Hidden many-to-many link entities (`_Entity_relationship`) are
    /// the store's own bookkeeping and are left out.
    struct Report: Sendable, Equatable {
        var store: String
        var entitiesAdded: [String] = []
        /// "Old → New".
        var entitiesRenamed: [String] = []
        var entitiesRemoved: [String] = []
        /// "Entity.property".
        var propertiesAdded: [String] = []
        /// "Entity.old → Entity.new" (the entity by its new name).
        var propertiesRenamed: [String] = []
        var propertiesRemoved: [String] = []
        /// Per entity (its new name), the rows the store held before and holds after.
        var rowsKept: [String: Int64] = [:]

        var changed: Bool {
            !(entitiesAdded.isEmpty && entitiesRenamed.isEmpty && entitiesRemoved.isEmpty
              && propertiesAdded.isEmpty && propertiesRenamed.isEmpty && propertiesRemoved.isEmpty)
        }

        /// The structured log line's fields.
        var fields: [String: JSONValue] {
            func list(_ items: [String]) -> JSONValue { .array(items.map { .string($0) }) }
            return ["store": .string(store), "entitiesAdded": list(entitiesAdded), "entitiesRenamed": list(entitiesRenamed),
                    "entitiesRemoved": list(entitiesRemoved), "propertiesAdded": list(propertiesAdded),
                    "propertiesRenamed": list(propertiesRenamed), "propertiesRemoved": list(propertiesRemoved),
                    "rowsKept": .object(rowsKept.mapValues { .int(Int($0)) }), "summary": .string(summary)]
        }

        /// One line for people: `Private store: entities renamed Journey → Trip; …; rows kept: Day 2, Trip 1`.
        var summary: String {
            let parts: [(String, [String])] = [("entities added", entitiesAdded), ("entities renamed", entitiesRenamed),
                                               ("entities removed", entitiesRemoved), ("properties added", propertiesAdded),
                                               ("properties renamed", propertiesRenamed), ("properties removed", propertiesRemoved)]
            let changes = parts.filter { !$0.1.isEmpty }.map { "\($0.0) \($0.1.joined(separator: ", "))" }
            let rows = rowsKept.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "\(store) store: " + (changes.isEmpty ? ["no model change"] : changes).joined(separator: "; ")
                + "; rows kept: " + (rows.isEmpty ? "none" : rows)
        }

        /// Compares the schema a store was written with against the model's entities, given
        /// which stored entity each new one comes from (its own name or its renaming identifier).
        static func compare(store: String, stored: [String: EntitySchema], entities: [EntityDescription],
                            sources: [String: String], rows: [String: Int64]) -> Report {
            var report = Report(store: store)
            let visible = entities.filter { !$0.name.hasPrefix("_") }.sorted { $0.name < $1.name }
            for entity in visible {
                guard let source = sources[entity.name], let old = stored[source] else {
                    report.entitiesAdded.append(entity.name)
                    continue
                }
                if source != entity.name { report.entitiesRenamed.append("\(source) → \(entity.name)") }
                report.rowsKept[entity.name] = rows[entity.name] ?? 0
                // As migrate(to:) carries them: an attribute from an old attribute, a relationship
                // from an old relationship, by its name or else its renaming identifier.
                let oldRelationships = old.toOne.union(old.toMany)
                let properties = entity.attributes.map { ($0.name, $0.renamingIdentifier, Set(old.attributes.keys)) }
                    + entity.relationships.map { ($0.name, $0.renamingIdentifier, oldRelationships) }
                let names = Set(properties.map(\.0))
                var carried: Set<String> = []
                for (name, renamingIdentifier, oldOfKind) in properties {
                    if oldOfKind.contains(name) {
                        carried.insert(name)
                    } else if let oldName = renamingIdentifier, oldOfKind.contains(oldName), !names.contains(oldName) {
                        carried.insert(oldName)
                        report.propertiesRenamed.append("\(entity.name).\(oldName) → \(entity.name).\(name)")
                    } else {
                        report.propertiesAdded.append("\(entity.name).\(name)")
                    }
                }
                report.propertiesRemoved += Set(old.attributes.keys).union(oldRelationships).subtracting(carried).sorted().map { "\(entity.name).\($0)" }
            }
            let used = Set(visible.compactMap { sources[$0.name] })
            report.entitiesRemoved = stored.keys.filter { !$0.hasPrefix("_") && !used.contains($0) }.sorted()
            return report
        }
    }
}
