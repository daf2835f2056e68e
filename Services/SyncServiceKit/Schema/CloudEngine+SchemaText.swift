import CloudWire
import MeowWire

public struct ExportSchemaResult: Codable, Sendable {
    public var environment: CloudEnvironment
    /// The schema in CloudKit's schema language (`SchemaText`).
    public var text: String
}

public struct ImportSchemaParams: Codable, Sendable {
    /// A schema in CloudKit's schema language.
    public var text: String
}

/// admin.importSchema's answer: what development gained.
public struct ImportSchemaResult: Codable, Sendable {
    public var added: [SchemaField]
    public var newRecordTypes: [String]
    /// Fields the text defines that development already had, with the same type.
    public var unchanged: Int
}

/// admin.resetDevelopment's answer.
public struct ResetDevelopmentResult: Codable, Sendable {
    public var zonesRemoved: Int
    /// Development's record types and fields now, production's.
    public var recordTypes: JSONValue
}

extension CloudEngine {
    /// admin.exportSchema: this engine's environment's schema as schema-language text.
    public func exportSchema() -> ExportSchemaResult {
        ExportSchemaResult(environment: environment, text: SchemaText.text(fieldSchema.withLock { $0 }.types))
    }

    /// admin.importSchema (as `cktool import-schema`, into development only): the text's record
    /// types and fields are added to development's schema in one transaction. Additive: a field
    /// development leaves out of the text stays; one the text gives another type than
    /// development's refuses the whole import (invalidArguments naming each), as does text
    /// that is not the schema language (naming its line and column). Either changes nothing.
    public func importSchema(_ text: String) throws -> ImportSchemaResult {
        let parsed = try SchemaText.parse(text)
        let development = inEnvironment(.development)
        return try development.write { state in
            var schema = development.fieldSchema.withLock { $0 }
            var conflicts: [RetypedField] = []
            var added: [SchemaField] = []
            var unchanged = 0
            for (recordType, fields) in parsed {
                for (field, type) in fields {
                    switch schema.types[recordType]?[field] {
                    case nil: added.append(SchemaField(recordType: recordType, field: field, type: CloudKitNames.typeName(type)))
                    case type: unchanged += 1
                    case let defined?:
                        conflicts.append(RetypedField(recordType: recordType, field: field, development: CloudKitNames.typeName(defined),
                                                      production: CloudKitNames.typeName(type)))
                    }
                }
            }
            conflicts.sort { ($0.recordType, $0.field) < ($1.recordType, $1.field) }
            guard conflicts.isEmpty else {
                let clauses = conflicts.map { "field '\($0.field)' of record type '\($0.recordType)' is \($0.production) in the text and \($0.development) in development" }
                throw WireError(.invalidArguments, "The schema text cannot be imported: " + clauses.joined(separator: "; ")
                                + ". A field's type never changes; give the field its defined type, or reset development. Nothing was imported.",
                                details: ["conflicts": try JSONValue(encoding: conflicts.map {
                                    ["recordType": $0.recordType, "field": $0.field, "text": $0.production, "development": $0.development]
                                })])
            }
            let newRecordTypes = parsed.keys.filter { schema.types[$0] == nil && !(parsed[$0]?.isEmpty ?? true) }.sorted()
            for (recordType, fields) in parsed {
                for (field, type) in fields where schema.types[recordType]?[field] == nil {
                    try state.db.execute("INSERT INTO field_types(record_type, field, type, environment) VALUES (?, ?, ?, '\(CloudEnvironment.development.rawValue)')",
                                         [recordType, field, type])
                    schema.define(recordType: recordType, field: field, type: type)
                }
            }
            development.fieldSchema.withLock { $0 = schema }
            return ImportSchemaResult(added: added.sorted { ($0.recordType, $0.field) < ($1.recordType, $1.field) },
                                      newRecordTypes: newRecordTypes, unchanged: unchanged)
        }
    }

    /// admin.resetDevelopment (CloudKit's "Reset Development Environment"): development's
    /// zones, records and shares removed, its schema returned to production's; production untouched.
    public func resetDevelopment() throws -> ResetDevelopmentResult {
        let development = inEnvironment(.development)
        let reset = try development.reset(ResetParams(scope: "all"))
        return ResetDevelopmentResult(zonesRemoved: reset.zonesRemoved, recordTypes: development.fieldSchema.withLock { $0 }.json)
    }
}
