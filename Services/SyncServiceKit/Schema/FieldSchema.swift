import CloudWire
import MeowWire

/// CloudKit's just-in-time schema, as in its development environment: the first save of a field
/// of a record type defines the field's type; a later save giving that field another type is
/// refused with invalidArguments and CloudKit's server message ("invalid attempt to set value
/// type STRING for field 'CD_value' for type 'CD_CareEvent', defined to be: DOUBLE"). One schema
/// per cloud, as one per container: every user's records of a type share it. Share records
/// (`cloudkit.share`) are CloudKit's own type and define nothing.
///
/// Why: an app version that changes an attribute's type writes records older versions cannot
/// read, and CloudKit refuses them at the server; here the same bug shows up the same way.
///
/// Production defines nothing on save: its schema is what was deployed from development, and a
/// record of another type, or with a field it does not have, is refused as CloudKit refuses it
/// (`productionRefusal`).
struct FieldSchema: Sendable, Equatable {
    /// Record type → field → type (this protocol's type names; a list as `list` + its items' type).
    private(set) var types: [String: [String: String]] = [:]

    init(types: [String: [String: String]] = [:]) { self.types = types }

    /// The types a record's fields give, for fields that define one: a null (the field's
    /// removal) defines nothing, nor does an empty list (CloudKit cannot tell its items' type).
    /// `signature`: the record's `StoredFields.typeSignature` when its fields came in stored
    /// form (read from it: the fields text is not scanned again).
    static func fieldTypes(of record: CloudRecord, signature: [UInt8]?) -> [(field: String, type: String)] {
        guard !record.isShare else { return [] }
        if let signature {
            let parts = signature.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            return stride(from: 0, to: parts.count - 1, by: 2).map { (parts[$0], parts[$0 + 1]) }
        }
        var found: [(String, String)] = []
        for (name, field) in record.fields {
            guard let type = field["type"]?.stringValue else { continue }
            if type == "list" {
                guard let item = field["value"]?.arrayValue?.first?["type"]?.stringValue else { continue }
                found.append((name, "list/" + item))
            } else {
                found.append((name, type))
            }
        }
        return found
    }

    /// Fields given as an empty list: they define no type, but Production refuses one its
    /// deployed schema lacks as it refuses any other undeployed field.
    static func emptyLists(of record: CloudRecord) -> [(field: String, type: String)] {
        guard !record.isShare, !record.fieldsAreStoredText else { return [] }
        return record.fields.compactMap { name, field in
            field["type"]?.stringValue == "list" && (field["value"]?.arrayValue?.isEmpty ?? true) ? (name, "list") : nil
        }
    }

    /// The error for the first field whose type differs from its definition, if any.
    func conflict(recordType: String, _ fields: [(field: String, type: String)]) -> WireError? {
        guard let defined = types[recordType] else { return nil }
        for (field, type) in fields {
            guard let definition = defined[field], definition != type else { continue }
            return WireError(.invalidArguments,
                             "invalid attempt to set value type \(CloudKitNames.typeName(type)) for field '\(field)' for type '\(recordType)', defined to be: \(CloudKitNames.typeName(definition))",
                             details: ["recordType": .string(recordType), "field": .string(field),
                                       "type": .string(CloudKitNames.typeName(type)), "definedType": .string(CloudKitNames.typeName(definition))])
        }
        return nil
    }

    /// Production's refusal of a record whose type, or one of whose fields, is not in this
    /// (deployed) schema: CloudKit's invalidArguments with its server message. The first
    /// undefined field by name is the one named, so the answer does not depend on field order.
    func productionRefusal(recordType: String, _ fields: [(field: String, type: String)]) -> WireError? {
        var details: [String: JSONValue] = ["recordType": .string(recordType), "environment": "production", "serverErrorCode": "BAD_REQUEST"]
        guard let defined = types[recordType] else {
            return WireError(.invalidArguments, "Cannot create new type \(recordType) in production schema", details: details)
        }
        guard let missing = fields.filter({ defined[$0.field] == nil }).min(by: { $0.field < $1.field }) else { return nil }
        details["field"] = .string(missing.field)
        details["type"] = .string(CloudKitNames.typeName(missing.type))
        return WireError(.invalidArguments, "Cannot create or modify field '\(missing.field)' in record '\(recordType)' in production schema",
                         details: details)
    }

    /// The fields among `fields` not defined yet.
    func undefined(recordType: String, _ fields: [(field: String, type: String)]) -> [(field: String, type: String)] {
        let defined = types[recordType]
        return fields.filter { defined?[$0.field] == nil }
    }

    /// Adds definitions; an existing one stays (the first definition wins).
    mutating func define(recordType: String, field: String, type: String) {
        if types[recordType]?[field] == nil { types[recordType, default: [:]][field] = type }
    }

    /// As `admin.schema` answers it: record type → field → CloudKit's type name.
    var json: JSONValue {
        .object(types.mapValues { fields in .object(fields.mapValues { .string(CloudKitNames.typeName($0)) }) })
    }
}
