import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import StoreServiceKit
import StoreWire

/// `sync.initializeSchema`.
extension CloudMirror {
    /// NSPersistentCloudKitContainer.initializeCloudKitSchema(options:): one representative
    /// record per mirrored entity, every field set, is saved to the private database's Core
    /// Data zone and deleted again. The cloud's just-in-time schema (the development
    /// environment's) learns every field's type before any real record is sent, and a field
    /// whose type the schema already gives otherwise (an app version that changed an
    /// attribute's type) fails here, with CloudKit's message, instead of at the first export.
    /// The records carry the types the mirror's exports give each attribute
    /// (`MirrorRecordCoding.fieldType`: booleans as int64, dates as date, …). Another
    /// device fetching meanwhile may see them come and go, as with Apple's.
    func initializeSchema(dryRun: Bool, progress: ProgressReporter = .silent) throws -> SchemaInitialization {
        let names = Set(engine.model.configurations.flatMap(\.entities))
        let entities = engine.model.entities.filter { names.contains($0.name) }
        var recordTypes: [String: [String: String]] = [:]
        var saves: [CloudRecord] = []
        for entity in entities {
            let (fields, types) = MirrorRecordCoding.representativeFields(entity)
            // One name per entity: a run again after one whose delete failed overwrites and
            // deletes the records that one left, instead of leaving them for devices to import.
            var record = CloudRecord(recordName: "initializeSchema-\(entity.name)", zoneID: .coreData, recordType: CloudKitNames.coreDataName(entity.name),
                                     fields: fields.objectValue ?? [:])
            recordTypes[record.recordType] = types
            if engine.model.isLinkEntity(entity.name) {
                // A many-to-many link goes out as a CDMR record: that type is the one to define.
                recordTypes.removeValue(forKey: record.recordType)
                record = MirrorLinkRecords.outgoing(record, model: engine.model)
                recordTypes[record.recordType] = record.fields.mapValues { CloudKitNames.typeName($0["type"]?.stringValue ?? "string") }
            }
            saves.append(record)
        }
        guard !dryRun else { return SchemaInitialization(recordTypes: recordTypes, uploaded: 0, dryRun: true) }
        try signedInCredential()
        // Made (or found) every time: a zone deleted since this process made it is made again.
        _ = try request("zones.save", ZonesParams(database: .private, zoneIDs: [.coreData]))
        progress.report(phase: "uploading", done: 0, total: saves.count)
        switch attempt("records.modify", ModifyParams(database: .private, saves: saves, savePolicy: .allKeys, atomic: true, reply: .tags)) {
        case .success: break
        case let .failure(error):
            // The item at fault says what the schema refused.
            guard let item = Self.itemAtFault(error) else { throw error }
            // Production learns nothing from saves: its server refuses the representative
            // records as it refuses any record of an undeployed type or field.
            let hint = options.environment == .production
                ? " initializeCloudKitSchema defines a schema only in the development environment; run it against development and deploy the schema to production (meowctl schema deploy)."
                : ""
            throw WireError(item.code, "sync.initializeSchema: \(item.message)\(hint)", details: item.details)
        }
        progress.report(phase: "uploading", done: saves.count, total: saves.count)
        let deletes = saves.map { DeleteItem(recordName: $0.recordName, zoneID: $0.zoneID) }
        do {
            _ = try request("records.modify", ModifyParams(database: .private, deletes: deletes, atomic: true))
            progress.report(phase: "deleting", done: deletes.count, total: deletes.count)
        } catch {
            throw WireError(error.code, "sync.initializeSchema: the schema is defined, but deleting its representative records failed (\(error.message)); run it again to delete them.",
                            details: error.details)
        }
        return SchemaInitialization(recordTypes: recordTypes, uploaded: saves.count, dryRun: false)
    }
}

extension MirrorRecordCoding {
    /// A record's fields with every stored property set to a stand-in value of its type (data
    /// attributes in their asset fields too), the per-field stamps field and the move receipt:
    /// every field a real export can carry, with its CloudKit type.
    static func representativeFields(_ entity: EntityDescription) -> (fields: JSONValue, types: [String: String]) {
        var fields: [String: JSONValue] = [:]
        var types: [String: String] = [:]
        func add(_ name: String, _ type: String, _ value: JSONValue) {
            fields[name] = ["type": .string(type), "value": value]
            types[name] = CloudKitNames.typeName(type)
        }
        add(CloudKitNames.entityNameField, "string", .string(entity.name))
        for attribute in entity.attributes {
            let stand: JSONValue
            switch attribute.type {
            case .string: stand = .string(attribute.allowedValues?.first ?? "initializeSchema")
            case .integer, .integer16, .integer32, .boolean, .date: stand = 0
            case .double, .float: stand = 0.5
            case .decimal: stand = "0.5"
            case .uuid: stand = "00000000-0000-0000-0000-000000000000"
            case .uri: stand = "https://example.com/initializeSchema"
            case .binary, .transformable: stand = "AA=="
            }
            add(fieldName(attribute.name), fieldType(attribute.type), stand)
        }
        // A data value past the store's asset threshold travels in its asset field instead.
        for attribute in entity.attributes where attribute.type.isData { add(assetFieldName(attribute.name), "asset", "AA==") }
        // A to-one relationship is the related record's name.
        for relationship in entity.toOneRelationships { add(fieldName(relationship.name), "string", "initializeSchema") }
        add(MirrorBookkeeping.fieldTimesField, "string", "{}")
        // A record a device moves into another zone (a share) carries its move receipt.
        add(MovedFrom.field, "bytes", "AA==")
        return (.object(fields), types)
    }
}
