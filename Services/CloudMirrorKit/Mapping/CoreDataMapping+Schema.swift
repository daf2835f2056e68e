import CloudWire
import MeowWire
import StoreServiceKit

/// The records sync.initializeSchema saves, and a record's wire form.
extension CoreDataMapping {
    /// One representative record per mirrored entity, every field set with the type the
    /// mirror's exports give it, in Core Data's zone; and each record type's field types.
    func schemaRecords() -> (records: [CloudRecord], recordTypes: [String: [String: String]]) {
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
                record = wireRecord(record)
                recordTypes[record.recordType] = record.fields.mapValues { CloudKitNames.typeName($0["type"]?.stringValue ?? "string") }
            }
            saves.append(record)
        }
        return (saves, recordTypes)
    }

    /// A record as it goes on the wire: a many-to-many link's record as CloudKit's CDMR record.
    func wireRecord(_ record: CloudRecord) -> CloudRecord {
        MirrorLinkRecords.outgoing(record, model: engine.model)
    }

    func readRecord(_ record: CloudRecord) -> CloudRecord {
        MirrorLinkRecords.incoming(record)
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
