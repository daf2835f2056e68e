import CloudWire
import MeowWire
import SQLiteKit

/// One field of a schema, its type as CloudKit names it (`CloudKitNames.typeName`).
public struct SchemaField: Codable, Sendable, Hashable {
    public var recordType: String
    public var field: String
    public var type: String
}

/// A field both environments have, with another type in each.
public struct RetypedField: Codable, Sendable, Hashable {
    public var recordType: String
    public var field: String
    public var development: String
    public var production: String
}

/// admin.diffSchema: development's schema against production's.
public struct SchemaDiff: Codable, Sendable {
    /// Record types development has and production has not (a deploy creates them).
    public var newRecordTypes: [String]
    /// Fields development has and production has not (a deploy adds them).
    public var added: [SchemaField]
    /// Fields production has and development has not: a deploy would remove them (refused).
    public var removed: [SchemaField]
    /// Fields whose type differs: a deploy would change a deployed type (refused).
    public var retyped: [RetypedField]
    /// Whether development's schema can be deployed (nothing removed or retyped).
    public var deployable: Bool
    /// Whether production already has everything development has.
    public var identical: Bool

    init(development: FieldSchema, production: FieldSchema) {
        let name = CloudKitNames.typeName
        newRecordTypes = development.types.keys.filter { production.types[$0] == nil }.sorted()
        var added: [SchemaField] = []
        var retyped: [RetypedField] = []
        for (recordType, fields) in development.types {
            for (field, type) in fields {
                switch production.types[recordType]?[field] {
                case nil: added.append(SchemaField(recordType: recordType, field: field, type: name(type)))
                case let deployed? where deployed != type:
                    retyped.append(RetypedField(recordType: recordType, field: field, development: name(type), production: name(deployed)))
                default: break
                }
            }
        }
        var removed: [SchemaField] = []
        for (recordType, fields) in production.types {
            for (field, type) in fields where development.types[recordType]?[field] == nil {
                removed.append(SchemaField(recordType: recordType, field: field, type: name(type)))
            }
        }
        let order = { (a: SchemaField, b: SchemaField) in (a.recordType, a.field) < (b.recordType, b.field) }
        self.added = added.sorted(by: order)
        self.removed = removed.sorted(by: order)
        self.retyped = retyped.sorted { ($0.recordType, $0.field) < ($1.recordType, $1.field) }
        deployable = removed.isEmpty && retyped.isEmpty
        identical = deployable && added.isEmpty
    }

    /// Why a deploy is refused, one clause per field, in CloudKit's terms.
    var refusal: String {
        let clauses = removed.map { "it would remove field '\($0.field)' (\($0.type)) of record type '\($0.recordType)'" }
            + retyped.map { "it would change field '\($0.field)' of record type '\($0.recordType)' from \($0.production) to \($0.development)" }
        return "Development's schema cannot be deployed to production: " + clauses.joined(separator: "; ")
            + ". A deployed record type or field is never removed and its type never changes; add a new field instead, or reset development to production's schema."
    }
}

/// admin.deploySchema's answer: what production gained.
public struct DeployResult: Codable, Sendable {
    public var deployed: [SchemaField]
    public var newRecordTypes: [String]
}

extension CloudEngine {
    /// Development's and production's committed schemas.
    func schemas() -> (development: FieldSchema, production: FieldSchema) {
        (core.schema(.development).withLock { $0 }, core.schema(.production).withLock { $0 })
    }

    /// admin.diffSchema.
    public func diffSchema() -> SchemaDiff {
        let (development, production) = schemas()
        return SchemaDiff(development: development, production: production)
    }

    /// admin.deploySchema: development's record types and fields are added to production's, in
    /// one transaction, as CloudKit's "Deploy Schema Changes" does. Additive only: a deploy
    /// that would remove a production field or change its type changes nothing and is refused
    /// with the reason (`SchemaDiff.refusal`).
    public func deploySchema() throws -> DeployResult {
        // Under the writer's lock: no save defines a development field between the diff and the commit.
        try write { state in
            let (development, production) = schemas()
            let diff = SchemaDiff(development: development, production: production)
            guard diff.deployable else {
                throw WireError(.invalidArguments, diff.refusal,
                                details: ["removed": try JSONValue(encoding: diff.removed), "retyped": try JSONValue(encoding: diff.retyped)])
            }
            var deployed = production
            for (recordType, fields) in development.types {
                for (field, type) in fields where production.types[recordType]?[field] == nil {
                    try state.db.execute("INSERT INTO field_types(record_type, field, type, environment) VALUES (?, ?, ?, '\(CloudEnvironment.production.rawValue)')",
                                         [recordType, field, type])
                    deployed.define(recordType: recordType, field: field, type: type)
                }
            }
            core.schema(.production).withLock { $0 = deployed }
            return DeployResult(deployed: diff.added, newRecordTypes: diff.newRecordTypes)
        }
    }
}
