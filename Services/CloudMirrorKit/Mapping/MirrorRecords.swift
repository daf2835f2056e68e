import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit

extension CloudRecord {
    /// `CD_CareEvent` → `CareEvent`.
    var entityName: String? { CloudKitNames.entityName(recordType: recordType) }
}

/// Conversions between store rows and Core Data's CloudKit record shape: record type
/// `CD_<Entity>`, fields `CD_<attribute>`, to-one relationships as the related record's name,
/// `CD_entityName`, and this project's `MC_fieldModified` (per-field edit stamps, JSON text).
enum MirrorRecordCoding {
    static func fieldName(_ property: String) -> String { CloudKitNames.coreDataName(property) }

    /// The field a large binary value travels in as a CloudKit asset (NSPersistentCloudKitContainer's name).
    static func assetFieldName(_ property: String) -> String { CloudKitNames.assetFieldName(property) }
    static let assetSuffix = CloudKitNames.assetSuffix

    static let isoFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func seconds(iso text: String) -> Double? { ISOTime.seconds(text) }

    /// A date attribute's storage text (milliseconds, the canonical form).
    static func iso(seconds: Double) -> String { ISOTime.string(seconds: seconds) }

    /// The fields of a stored row as a tree (nil values are left out: a nil is the field's
    /// absence), read from the one text builder below (merges, share moves and history rebuilds
    /// want a tree; sends use the text as it is).
    static func fields(entity: EntityDescription, row: PersistentStore.StoredRow, state: StoreBookkeeping,
                       timesText: String?) throws -> [String: JSONValue] {
        var cache = TextCache()
        return try JSONParser.parse(try fieldsText(entity: entity, row: row, state: state, timesText: timesText, cache: &cache)).objectValue ?? [:]
    }

    /// A stored row as record fields written straight to JSON text (a batch of 400 built as
    /// trees of dictionaries and then written cost more than the rest of a send): the fields
    /// object a save sends, which the device also keeps as the record's server fields (the next
    /// merge's ancestor, and the record's stamps until a local edit writes a stamps row) once
    /// the save is acknowledged.
    /// `cache` lasts a batch: related records' names by entity and primary key (a batch of events
    /// names one session again and again) and the last stamps text as a JSON string (a bulk
    /// save's records share one, and escaping it was a tenth of building a batch).
    struct TextCache {
        var names: [Related: String?] = [:]
        var stamps: (text: String, quoted: RecordFields.Builder.Quoted)?
        /// The last record's text length: room for the next one is reserved up front.
        var lastLength = 0
        /// Per entity: its stored properties in field-name order, each with its field's opening
        /// text (`"CD_name":{"type":…,"value":`), so a record is written in one pass.
        var layouts: [String: [Slot]] = [:]

        /// A related row, the key of its record's name (no text made per lookup).
        struct Related: Hashable {
            var entity: String
            var primaryKey: Int64
        }

        /// A field a stored property may be written in: an asset slot holds a data attribute's
        /// value past the store's asset threshold, its plain slot the value otherwise.
        struct Slot {
            var position: Int
            var name: String
            var opening: RecordFields.Builder.Opening
            var asset: Bool
        }

        mutating func layout(_ entity: EntityDescription) -> [Slot] {
            if let layout = layouts[entity.name] { return layout }
            // The stored properties' fields in name order (the order a fetch reads them in), and
            // the entity's name in its place among them (position -1): records go out in key
            // order, the stored form the sync-service keeps without writing them again.
            let fields = (MirrorImport.FieldLayout(entity).sorted + [(CloudKitNames.entityNameField, -1)]).sorted { $0.name < $1.name }
            let layout = fields.map { name, position -> Slot in
                // The entity's name and relationships (related record names) are strings.
                let isAttribute = position >= 0 && position < entity.attributes.count
                let asset = isAttribute && name.hasSuffix(assetSuffix) && entity.attributes[position].type.isData
                let type = asset ? "asset" : isAttribute ? fieldType(entity.attributes[position].type) : "string"
                return Slot(position: position, name: name, opening: RecordFields.Builder.opening(name: name, type: type), asset: asset)
            }
            layouts[entity.name] = layout
            return layout
        }
    }

    /// The field type an attribute's values go out as (NSPersistentCloudKitContainer's
    /// mapping: whole numbers and flags INT64, Float and Double DOUBLE, Date TIMESTAMP, data
    /// BYTES, and Decimal, UUID and URI as their text in STRING).
    static func fieldType(_ type: AttributeType) -> String {
        switch type {
        case .string, .decimal, .uuid, .uri: return "string"
        case .integer, .integer16, .integer32, .boolean: return "int64"
        case .double, .float: return "double"
        case .date: return "date"
        case .binary, .transformable: return "bytes"
        }
    }

    /// The stamps field's opening (a string holding the stamps' JSON text).
    static let stampsOpening = RecordFields.Builder.opening(name: MirrorBookkeeping.fieldTimesField, type: "string")

    /// `only`: the fields to write (an update of a record the server has carries the keys it
    /// changed, and the stamps); nil writes them all. Written by the fields writer
    /// (`RecordFields.Builder`), so the text is the canonical one the sync-service stores.
    static func fieldsText(entity: EntityDescription, row: PersistentStore.StoredRow, state: StoreBookkeeping,
                           timesText: String?, only: Set<String>? = nil, cache: inout TextCache) throws -> String {
        var record = RecordFields.Builder(capacity: cache.lastLength + 64)
        let attributeCount = entity.attributes.count
        for slot in cache.layout(entity) {
            let (position, name, opening) = (slot.position, slot.name, slot.opening)
            if let only, !only.contains(slot.asset ? String(name.dropLast(assetSuffix.count)) : name) { continue }
            if position < 0 {
                record.open(opening)
                record.string(entity.name)
                record.close()
                continue
            }
            let value = row.values[position]
            guard !value.isNull else { continue }
            if position < attributeCount, entity.attributes[position].type.isData,
               ((value.bytes?.count ?? 0) > state.store.assetThreshold) != slot.asset { continue }
            var related: String?
            if position >= attributeCount {
                // A related record's name, or nothing when the related row is gone.
                guard let key = value.int64 else { continue }
                let destination = entity.toOneRelationships[position - attributeCount].destination
                let cacheKey = TextCache.Related(entity: destination, primaryKey: key)
                if cache.names[cacheKey] == nil { cache.names[cacheKey] = .some(try state.uuid(entity: destination, primaryKey: key)) }
                guard let found = cache.names[cacheKey] ?? nil else { continue }
                related = found
            }
            record.open(opening)
            if let related {
                record.string(related)
            } else {
                switch entity.attributes[position].type {
                case .string, .decimal, .uuid, .uri: record.string(value.string ?? "")
                case .integer, .integer16, .integer32, .boolean: record.int64(value.int64 ?? 0)
                case .double, .float: record.double(value.double ?? 0)
                case .date: record.double(seconds(iso: value.string ?? "") ?? 0)
                case .binary, .transformable: record.string(Data(value.bytes ?? []).base64EncodedString())
                }
            }
            record.close()
        }
        // The stamps last ("MC_" sorts after "CD_"), as stored: the same text the record
        // carries (no parse and re-encode).
        if let timesText, !FieldStamp.isEmptyText(timesText) {
            record.open(stampsOpening)
            if let stamps = cache.stamps, stamps.text == timesText {
                record.string(quoted: stamps.quoted)
            } else {
                let quoted = RecordFields.Builder.quoted(timesText)
                cache.stamps = (timesText, quoted)
                record.string(quoted: quoted)
            }
            record.close()
        }
        let text = record.finish()
        cache.lastLength = text.utf8.count
        return text
    }

    /// The per-field edit stamps a record carries.
    static func times(_ fields: [String: JSONValue]?) -> [String: FieldStamp] {
        FieldStamp.decode(fields?[MirrorBookkeeping.fieldTimesField]?["value"]?.stringValue)
    }

    /// The fields two sides can edit (bookkeeping fields aside), numbers normalised so that a
    /// double sent as `250.0` and read back as `250` compare equal.
    ///
    /// A value in an asset field (`CD_<name>_ckAsset`) counts as its property's field
    /// (`CD_<name>`, as bytes): the two are one property, stamped and merged under that name.
    static func dataFields(_ fields: [String: JSONValue]?) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for (name, field) in fields ?? [:] where name != MirrorBookkeeping.fieldTimesField && name != CloudKitNames.entityNameField
            && name != MovedFrom.field && name != MovedFrom.formerField {
            if name.hasSuffix(assetSuffix), var object = field.objectValue, object["type"] == "asset" {
                let property = String(name.dropLast(assetSuffix.count))
                guard fields?[property] == nil else { continue }
                object["type"] = "bytes"
                result[property] = .object(object)
                continue
            }
            guard var object = field.objectValue, let type = object["type"]?.stringValue, type == "double" || type == "date",
                  let number = object["value"]?.doubleValue else {
                result[name] = field
                continue
            }
            object["value"] = .double(number)
            result[name] = .object(object)
        }
        return result
    }

    /// Wire values for `object.set`-style application: attributes converted back from record
    /// fields (absent → null), relationships as record names (resolved by the caller).
    static func attributeValues(entity: EntityDescription, fields: [String: JSONValue]) -> [String: JSONValue] {
        var values: [String: JSONValue] = [:]
        for attribute in entity.attributes {
            var field = fields[fieldName(attribute.name)]
            if field == nil, attribute.type.isData { field = fields[assetFieldName(attribute.name)] }
            values[attribute.name] = attributeValue(field?["value"], type: attribute.type)
        }
        return values
    }

    /// A field's value as the attribute's wire value (dates as ISO text); null when absent. A
    /// value of another type is passed on as it is, so that `context.set` refuses it and the
    /// record is reported (`applyRefusing`): read as null, another client's wrong value
    /// silently emptied the attribute here.
    static func attributeValue(_ value: JSONValue?, type: AttributeType) -> JSONValue {
        guard let value, !value.isNull else { return .null }
        switch type {
        case .string, .decimal, .uuid, .uri, .binary, .transformable: return value.stringValue.map { .string($0) } ?? value
        case .integer, .integer16, .integer32: return value.intValue.map { .int($0) } ?? value
        case .boolean: return value.intValue.map { .bool($0 != 0) } ?? value.boolValue.map { .bool($0) } ?? value
        case .double, .float: return value.doubleValue.map { .double($0) } ?? value
        case .date: return value.doubleValue.map { .string(iso(seconds: $0)) } ?? value
        }
    }

    /// The related record names of a record's to-one relationships (nil: cleared).
    static func relationshipNames(entity: EntityDescription, fields: [String: JSONValue]) -> [String: String?] {
        var names: [String: String?] = [:]
        for relationship in entity.toOneRelationships {
            names[relationship.name] = fields[fieldName(relationship.name)]?["value"]?.stringValue
        }
        return names
    }
}

/// The move receipt a record carries after a device moved it into another zone (sharing a
/// session moves its graph; an event follows its session), in `CD_moveReceipt`, the field
/// NSPersistentCloudKitContainer keeps its own move receipts in (BYTES; `sync.initializeSchema`
/// defines it on every record type, so a deployed schema has it): the zone the record left and
/// the change tag of the copy the mover had there, as JSON text. The move deletes that copy
/// unconditionally (CloudKit's deletes take no tag), so an edit another device saved there
/// after the mover last fetched is deleted with it, and the moved copy lacks it. That device
/// holds a copy with another tag and so can tell: it merges the two as concurrent versions
/// (`CoreDataMapping.applyPage`). The next ordinary save of the record, which sends the whole field
/// set, leaves the field behind.
struct MovedFrom: Equatable {
    static let field = CloudKitNames.moveReceiptField
    /// The receipt's name on records a mirror moved before it wrote Core Data's field: never a
    /// data field, so such a record merges as it did.
    static let formerField = "MC_movedFrom"

    var zoneName: String
    var changeTag: String

    init(zoneName: String, changeTag: String) {
        self.zoneName = zoneName
        self.changeTag = changeTag
    }

    /// The field of a record's fields, if it has one that reads.
    init?(fields: [String: JSONValue]?) {
        guard let base64 = fields?[Self.field]?["value"]?.stringValue, let data = Data(base64Encoded: base64),
              let object = try? JSONParser.parse(String(decoding: data, as: UTF8.self)).objectValue,
              let zoneName = object["zoneName"]?.stringValue, let changeTag = object["recordChangeTag"]?.stringValue else { return nil }
        self.init(zoneName: zoneName, changeTag: changeTag)
    }

    /// The field: bytes holding `{"recordChangeTag":…,"zoneName":…}`.
    var fieldValue: JSONValue {
        let text = JSONWriter.text(["recordChangeTag": .string(changeTag), "zoneName": .string(zoneName)])
        return ["type": "bytes", "value": .string(Data(text.utf8).base64EncodedString())]
    }

    /// Fields text (`MirrorRecordCoding.fieldsText`) with the field added in its place among
    /// the others (keys ascend in stored form).
    func adding(to fieldsText: String) -> String {
        guard var fields = (try? JSONParser.parse(fieldsText))?.objectValue else { return fieldsText }
        fields[Self.field] = fieldValue
        return RecordFields(fields).text
    }
}
