import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// Lightweight migration of a store written by an earlier model version, as Core Data infers
/// it: added entities and attributes (optional, or filled with their default), removed ones,
/// renames by renaming identifier, an attribute becoming optional, or non-optional with a
/// default. Anything else (an attribute's type changed, a relationship turned between to-one
/// and to-many, a new mandatory attribute without a default on existing rows) is a change Core
/// Data cannot infer: the store is refused before anything is written.
///
/// The store keeps the schema it was written with (`z_metadata` key `schema`) so that the next
/// open can tell what changed; a store written before that has its columns read instead, whose
/// SQL types stand in for the attribute types.
struct StoreMigration {
    /// One entity as a store holds it: attribute name → type; relationship names by kind.
    struct EntitySchema: Equatable {
        var attributes: [String: String]
        var toOne: Set<String>
        var toMany: Set<String>
    }

    let database: Database
    let storeName: String

    static func schema(of entities: [EntityDescription]) -> [String: EntitySchema] {
        Dictionary(uniqueKeysWithValues: entities.map { entity in
            (entity.name, EntitySchema(attributes: Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, $0.type.rawValue) }),
                                       toOne: Set(entity.relationships.filter { !$0.toMany }.map(\.name)),
                                       toMany: Set(entity.relationships.filter(\.toMany).map(\.name))))
        })
    }

    static func text(of schema: [String: EntitySchema]) -> String {
        JSONWriter.text(.object(schema.mapValues { entity in
            ["attributes": .object(entity.attributes.mapValues { .string($0) }),
             "toOne": .array(entity.toOne.sorted().map { .string($0) }), "toMany": .array(entity.toMany.sorted().map { .string($0) })]
        }))
    }

    /// `text(of: schema(of: entities))`, written from the entities without the schema's
    /// dictionaries and sets or a JSON tree (a store writes it at every open, a new one too;
    /// building the tree was most of a new in-memory store's own work beside its DDL): entities,
    /// attributes and relationship names sorted as the tree's writer sorts keys.
    static func text(of entities: [EntityDescription]) -> String {
        var out = "{"
        for (index, entity) in entities.sorted(by: { $0.name < $1.name }).enumerated() {
            if index > 0 { out += "," }
            JSONWriter.appendString(entity.name, to: &out)
            out += #":{"attributes":{"#
            for (index, attribute) in entity.attributes.sorted(by: { $0.name < $1.name }).enumerated() {
                if index > 0 { out += "," }
                JSONWriter.appendString(attribute.name, to: &out)
                out += ":"
                JSONWriter.appendString(attribute.type.rawValue, to: &out)
            }
            out += #"},"toMany":"#
            appendNames(entity.relationships.filter(\.toMany), to: &out)
            out += #","toOne":"#
            appendNames(entity.relationships.filter { !$0.toMany }, to: &out)
            out += "}"
        }
        out += "}"
        return out
    }

    /// Relationship names as a sorted array of distinct strings (as the schema's sets give them).
    private static func appendNames(_ relationships: [RelationshipDescription], to out: inout String) {
        out += "["
        var previous: String?
        for name in relationships.map(\.name).sorted() where name != previous {
            if previous != nil { out += "," }
            JSONWriter.appendString(name, to: &out)
            previous = name
        }
        out += "]"
    }

    /// The schema the store was written with; nil for a new store.
    func storedSchema() throws -> [String: EntitySchema]? {
        if let text = try database.scalar("SELECT value FROM z_metadata WHERE key = 'schema'")?.string,
           case let .object(entities)? = try? JSONParser.parse(Array(text.utf8)) {
            return entities.mapValues { entity in
                EntitySchema(attributes: (entity["attributes"]?.objectValue ?? [:]).compactMapValues(\.stringValue),
                             toOne: Set(entity["toOne"]?.arrayValue?.compactMap(\.stringValue) ?? []),
                             toMany: Set(entity["toMany"]?.arrayValue?.compactMap(\.stringValue) ?? []))
            }
        }
        guard try database.scalar("SELECT 1 FROM z_metadata WHERE key = 'storeUUID'") != nil else { return nil }
        // Written before the store kept its schema: its columns say what it holds.
        var entities: [String: EntitySchema] = [:]
        for table in try database.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'e\\_%' ESCAPE '\\'").compactMap({ $0[0].string }) {
            var entity = EntitySchema(attributes: [:], toOne: [], toMany: [])
            for column in try database.query("SELECT name, type FROM pragma_table_info(?)", [table]) {
                guard let name = column[0].string else { continue }
                if name.hasPrefix("a_") { entity.attributes[String(name.dropFirst(2))] = "sql:" + (column[1].string ?? "") }
                if name.hasPrefix("r_") { entity.toOne.insert(String(name.dropFirst(2))) }
            }
            entities[String(table.dropFirst(2))] = entity
        }
        return entities
    }

    /// Checks every change against what Core Data infers, then renames tables and columns and
    /// fills defaults; the caller adds new tables and columns afterwards. Runs in the schema's
    /// transaction, so a refusal leaves the store as it was. Returns what changed (nil for a
    /// new store).
    func migrate(to entities: [EntityDescription]) throws -> Report? {
        guard let stored = try storedSchema() else { return nil }
        var sources: [String: String] = [:]
        var renamedTables: [(from: String, to: String)] = []
        var statements: [(String, [any SQLBindable])] = []
        for entity in entities.sorted(by: { $0.name < $1.name }) {
            let oldName = stored[entity.name] != nil ? entity.name
                : entity.renamingIdentifier.flatMap { old in stored[old] != nil && !entities.contains { $0.name == old } ? old : nil }
            guard let oldName, let old = stored[oldName] else { continue }
            sources[entity.name] = oldName
            if oldName != entity.name { renamedTables.append((oldName, entity.name)) }
            let table = PersistentStore.table(entity.name)
            let rows = try database.scalar("SELECT count(*) FROM \(PersistentStore.table(oldName))")?.int64 ?? 0
            for attribute in entity.attributes {
                let place = "\(entity.name).\(attribute.name)"
                let source = old.attributes[attribute.name] != nil ? attribute.name
                    : attribute.renamingIdentifier.flatMap { old.attributes[$0] != nil && entity.attribute($0) == nil ? $0 : nil }
                if let source, let oldType = old.attributes[source] {
                    guard Self.compatible(oldType, attribute.type) else {
                        throw refusal(134140, "\(place) changed type from \(oldType) to \(attribute.type.rawValue)", entity: entity.name, property: attribute.name)
                    }
                    if source != attribute.name {
                        statements.append(("ALTER TABLE \(table) RENAME COLUMN \"a_\(source)\" TO \"a_\(attribute.name)\"", []))
                    }
                    if !attribute.optional {
                        try fill(attribute, of: entity, table: table, oldTable: oldName, rows: rows, onlyNulls: true, into: &statements)
                    }
                } else {
                    if try hasColumn(oldName, "a_\(attribute.name)") {
                        // Left by an attribute of that name a version removed: not this attribute's data.
                        for index in try indexes(oldName, using: "a_\(attribute.name)") { statements.append(("DROP INDEX \"\(index)\"", [])) }
                        statements.append(("ALTER TABLE \(table) DROP COLUMN \"a_\(attribute.name)\"", []))
                    }
                    try fill(attribute, of: entity, table: table, oldTable: oldName, rows: rows, onlyNulls: false, into: &statements)
                }
            }
            for relationship in entity.relationships {
                let place = "\(entity.name).\(relationship.name)"
                let source = old.toOne.contains(relationship.name) || old.toMany.contains(relationship.name) ? relationship.name
                    : relationship.renamingIdentifier.flatMap { (old.toOne.contains($0) || old.toMany.contains($0)) && entity.relationship($0) == nil ? $0 : nil }
                guard let source else { continue }
                let wasToMany = old.toMany.contains(source)
                guard wasToMany == relationship.toMany else {
                    throw refusal(134140, "\(place) changed from \(wasToMany ? "to-many" : "to-one") to \(relationship.toMany ? "to-many" : "to-one")",
                                  entity: entity.name, property: relationship.name)
                }
                if source != relationship.name, !relationship.toMany {
                    statements.append(("ALTER TABLE \(table) RENAME COLUMN \"r_\(source)\" TO \"r_\(relationship.name)\"", []))
                }
            }
        }
        for (from, to) in renamedTables { try renameTable(from, to) }
        for (sql, values) in statements { try database.execute(sql, values) }
        var rows: [String: Int64] = [:]
        for entity in sources.keys { rows[entity] = try database.scalar("SELECT count(*) FROM \(PersistentStore.table(entity))")?.int64 ?? 0 }
        return Report.compare(store: storeName, stored: stored, entities: entities, sources: sources, rows: rows)
    }

    /// A new attribute's value in existing rows, or a newly mandatory one's in rows without one:
    /// its default; without a default a mandatory attribute cannot be filled.
    /// `oldTable`: the entity's name in the store now (the table is renamed later).
    private func fill(_ attribute: AttributeDescription, of entity: EntityDescription, table: String, oldTable: String, rows: Int64,
                      onlyNulls: Bool, into statements: inout [(String, [any SQLBindable])]) throws {
        guard let value = attribute.defaultValue, value != .null else {
            guard !attribute.optional else { return }
            let source = onlyNulls ? (attribute.renamingIdentifier.flatMap { try? hasColumn(oldTable, "a_\($0)") == true ? $0 : nil } ?? attribute.name) : attribute.name
            let empty = onlyNulls
                ? try database.scalar("SELECT count(*) FROM \(PersistentStore.table(oldTable)) WHERE \"a_\(source)\" IS NULL")?.int64 ?? 0 : rows
            if empty > 0 {
                throw refusal(134110, "\(entity.name).\(attribute.name) is mandatory and has no default value, and \(empty) existing object(s) have no value for it",
                              entity: entity.name, property: attribute.name)
            }
            return
        }
        let stored = try AttributeCoding.storageValue(value, for: attribute, entity: entity.name)
        if !onlyNulls {
            statements.append(("ALTER TABLE \(table) ADD COLUMN \"a_\(attribute.name)\" \(PersistentStore.sqlType(attribute.type))", []))
        }
        statements.append(("UPDATE \(table) SET \"a_\(attribute.name)\" = ? WHERE \"a_\(attribute.name)\" IS NULL", [stored]))
    }

    /// Renames an entity's table and every record of its name the store keeps beside its rows.
    private func renameTable(_ from: String, _ to: String) throws {
        try database.execute("ALTER TABLE \(PersistentStore.table(from)) RENAME TO \(PersistentStore.table(to))")
        for index in try database.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name LIKE ?",
                                         ["e_\(to)", "i\\_\(from)\\_%"]).compactMap({ $0[0].string }) {
            try database.execute("DROP INDEX \"\(index)\"")
        }
        try database.execute("UPDATE z_primarykey SET entity = ? WHERE entity = ?", [to, from])
        for table in ["mirror_meta", "mirror_pending", "mirror_unimportable"] where try hasTable(table, prefix: "") {
            try database.execute("UPDATE \(table) SET entity = ? WHERE entity = ?", [to, from])
        }
    }

    /// Whether a stored attribute type can be read as `type`: the same type, or a column of a
    /// store that did not record types whose SQL type `type` would have.
    static func compatible(_ stored: String, _ type: AttributeType) -> Bool {
        if stored.hasPrefix("sql:") { return stored == "sql:" + PersistentStore.sqlType(type) }
        return stored == type.rawValue
    }

    private func hasTable(_ name: String, prefix: String = "e_") throws -> Bool {
        try database.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [prefix + name]) != nil
    }

    /// The indexes of an entity's table that use `column`.
    private func indexes(_ entity: String, using column: String) throws -> [String] {
        try database.query("SELECT name FROM pragma_index_list(?)", ["e_\(entity)"]).compactMap { $0[0].string }.filter { index in
            try database.scalar("SELECT 1 FROM pragma_index_info(?) WHERE name = ?", [index, column]) != nil
        }
    }

    private func hasColumn(_ entity: String, _ column: String) throws -> Bool {
        try database.scalar("SELECT 1 FROM pragma_table_info(?) WHERE name = ?", ["e_\(entity)", column]) != nil
    }

    private func refusal(_ number: Int, _ reason: String, entity: String, property: String) -> ServiceError {
        let message = number == 134140
            ? "Can't find mapping model for migration: \(reason). Core Data cannot infer this change; the \(storeName) store was left as it was."
            : "An error occurred during persistent store migration: \(reason). The \(storeName) store was left as it was."
        return StoreError.coreData(number == 134140 ? .migrationMissingMappingModel : .migrationFailed, number, message,
                                   ["entity": .string(entity), "property": .string(property), "store": .string(storeName)])
    }
}
