import CloudWire
import Foundation
import MeowWire
import StoreWire

/// `meowctl diff`'s comparison: a device's stores against its user's cloud databases, zone by
/// zone, for every field of every record (CD_<attribute>; to-one relationships by the related
/// record's name; each value as the field type its attribute is sent as: integers exactly, dates to
/// the millisecond, bytes by their content, an asset field as its attribute's value; many-to-many
/// links as CDMR records, see `ManyToManyLinks`).
///
/// ```swift
/// let local = try await StoreCloudDiff.deviceItems(device)
/// var cloud: [String: StoreCloudDiff.Item] = [:], unreadable: [String] = []
/// for database in ["private", "shared"] { try await StoreCloudDiff.cloudItems(user, database: database, into: &cloud, unreadable: &unreadable) }
/// let reports = StoreCloudDiff.compare(local: local, cloud: cloud)
/// ```
public enum StoreCloudDiff {
    /// One side's view of one record: where it is and its comparable fields.
    public struct Item: Sendable, Hashable {
        public var database: String
        public var zone: String
        public var entity: String
        public var objectID: String?
        public var fields: [String: String]
    }

    public struct ZoneReport: Sendable {
        public var database: String
        public var zone: String
        public var matching = 0
        public var onlyInCloud: [(name: String, item: Item)] = []
        public var onlyOnDevice: [(name: String, item: Item)] = []
        public var differing: [(name: String, item: Item, fields: [(String, String?, String?)])] = []

        public var clean: Bool { onlyInCloud.isEmpty && onlyOnDevice.isEmpty && differing.isEmpty }

        public var json: JSONValue {
            ["database": .string(database), "zone": .string(zone), "matching": .int(matching),
             "onlyInCloud": .array(onlyInCloud.map { ["recordName": .string($0.name), "entity": .string($0.item.entity)] }),
             "onlyOnDevice": .array(onlyOnDevice.map { ["recordName": .string($0.name), "entity": .string($0.item.entity),
                                                        "objectID": $0.item.objectID.map { .string($0) } ?? .null] }),
             "differing": .array(differing.map { entry in
                 ["recordName": .string(entry.name), "entity": .string(entry.item.entity),
                  "objectID": entry.item.objectID.map { .string($0) } ?? .null,
                  "fields": .array(entry.fields.map { ["field": .string($0.0), "device": $0.1.map { .string($0) } ?? .null,
                                                        "cloud": $0.2.map { .string($0) } ?? .null] })]
             })]
        }
    }

    public static func key(_ database: String, _ name: String) -> String { "\(database)|\(name)" }

    /// Every object of the device, keyed by database and record name (its uuid).
    public static func deviceItems(_ device: any InspectionConnection) async throws(InspectionError) -> [String: Item] {
        let stores = try await device.call("store.list", as: StoreListResult.self).stores
        let database = Dictionary(stores.map { ($0.name, $0.scope == .shared ? "shared" : "private") }, uniquingKeysWith: { first, _ in first })
        let owners = Dictionary(try await device.call("share.list", as: ShareListResult.self).shares.map { ($0.zoneName, $0.ownerName) },
                                uniquingKeysWith: { first, _ in first })
        let entities = try await device.call("model.get")["entities"]?.arrayValue ?? []
        let links = ManyToManyLinks.linkEntities(entities)
        var rows: [(entity: JSONValue, row: [String: JSONValue])] = []
        for entity in entities {
            guard let name = entity["name"]?.stringValue else { continue }
            rows += try await device.rows(entity: name).map { (entity, $0) }
        }
        let uuidOf = Dictionary(rows.compactMap { entry in
            entry.row["objectID"]?.stringValue.flatMap { id in entry.row["uuid"]?.stringValue.map { (id, $0) } }
        }, uniquingKeysWith: { first, _ in first })
        var items: [String: Item] = [:]
        for (entity, row) in rows {
            guard let uuid = row["uuid"]?.stringValue, let store = row["store"]?.stringValue else { continue }
            let db = database[store] ?? "private"
            let zone: String
            if let name = row["zone"]?.stringValue {
                zone = "\(owners[name] ?? "?")/\(name)"
            } else {
                zone = db == "private" ? "\(ZoneID.defaultOwner)/\(ZoneID.coreDataZoneName)" : "(no zone)"
            }
            let entityName = entity["name"]?.stringValue ?? "?"
            if let sides = links[entityName] {
                let fields = ManyToManyLinks.fields(row: row, sides: sides) { uuidOf[$0] ?? $0 }
                items[key(db, uuid)] = Item(database: db, zone: zone, entity: ManyToManyLinks.recordType, objectID: row["objectID"]?.stringValue, fields: fields)
                continue
            }
            var fields: [String: String] = [:]
            for attribute in entity["attributes"]?.arrayValue ?? [] {
                guard let name = attribute["name"]?.stringValue, let value = row[name], !value.isNull else { continue }
                fields[CloudKitNames.coreDataName(name)] = normalize(local: value, type: attribute["type"]?.stringValue ?? "string")
            }
            for relationship in entity["relationships"]?.arrayValue ?? [] where relationship["toMany"] != true {
                guard let name = relationship["name"]?.stringValue, let target = row[name]?.stringValue else { continue }
                fields[CloudKitNames.coreDataName(name)] = uuidOf[target] ?? target
            }
            items[key(db, uuid)] = Item(database: db, zone: zone, entity: entityName, objectID: row["objectID"]?.stringValue, fields: fields)
        }
        return items
    }

    /// Every CD_ record of one database, zone by zone.
    public static func cloudItems(_ cloud: any InspectionConnection, database: String, into items: inout [String: Item],
                           unreadable: inout [String]) async throws(InspectionError) {
        var zones: [JSONValue] = []
        var since = JSONValue.null
        while true {
            let page = try await cloud.call("changes.fetchDatabase", ["database": .string(database), "since": since])
            zones += page["changedZones"]?.arrayValue ?? []
            guard page["moreComing"] == true else { break }
            since = page["token"] ?? .null
        }
        for zone in zones {
            let zoneKey = "\(zone["ownerName"].cell)/\(zone["zoneName"].cell)"
            var token = JSONValue.null
            while true {
                let page: JSONValue
                switch try await cloud.attempt("changes.fetchZone", ["database": .string(database), "zoneID": zone, "since": token, "limit": 400]) {
                case let .success(value): page = value
                case let .failure(error):
                    unreadable.append("\(database) \(zoneKey): \(error.code) — \(error.message)")
                    page = .null
                }
                for record in page["changed"]?.arrayValue ?? [] {
                    guard let type = record["recordType"]?.stringValue, let name = record["recordName"]?.stringValue else { continue }
                    if type == ManyToManyLinks.recordType {
                        items[key(database, name)] = Item(database: database, zone: zoneKey, entity: type, objectID: nil,
                                                          fields: ManyToManyLinks.fields(record: record["fields"]?.objectValue ?? [:]))
                        continue
                    }
                    guard let entity = CloudKitNames.entityName(recordType: type) else { continue }
                    var fields: [String: String] = [:]
                    for (field, value) in record["fields"]?.objectValue ?? [:] where field.hasPrefix(CloudKitNames.coreDataPrefix) && !CloudKitNames.bookkeepingFields.contains(field) {
                        // A cleared field (null) is absent, as a nil attribute is on the device.
                        guard let text = normalize(cloud: value) else { continue }
                        let attribute = attributeField(field)
                        // A record holds one of the plain and the asset field; the asset wins if both do.
                        if attribute != field || fields[attribute] == nil { fields[attribute] = text }
                    }
                    items[key(database, name)] = Item(database: database, zone: zoneKey, entity: entity,
                                                      objectID: nil, fields: fields)
                }
                guard page["moreComing"] == true else { break }
                token = page["token"] ?? .null
            }
        }
    }

    /// The attribute field a record field holds: `CD_thumbnail_ckAsset` is `CD_thumbnail`'s value.
    public static func attributeField(_ field: String) -> String {
        field.hasSuffix(CloudKitNames.assetSuffix) ? String(field.dropLast(CloudKitNames.assetSuffix.count)) : field
    }

    /// The cloud field type the mirror sends an attribute of this type as (protocol-mirroring.md's
    /// record mapping); both sides are compared in its terms.
    public static func fieldType(attribute type: String) -> String {
        switch type {
        case "integer16", "integer32", "integer", "integer64", "boolean": return "int64"
        case "double", "float": return "double"
        case "date": return "date"
        case "binary", "transformable": return "bytes"
        default: return "string"
        }
    }

    /// A device's value as comparable text, by the field type its attribute is sent as.
    public static func normalize(local value: JSONValue, type: String) -> String {
        switch fieldType(attribute: type) {
        case "date":
            guard let instant = value.stringValue.flatMap(ISOTime.instant) else { return value.cell }
            let text = ISOTime.string(instant)
            return text.isEmpty ? value.cell : text
        case "int64": return integer(value)
        case "double": return value.doubleValue.map(number) ?? value.cell
        case "bytes": return bytes(value)
        default: return value.cell
        }
    }

    /// A cloud field's value as comparable text, by the field's declared type; nil for a null.
    public static func normalize(cloud field: JSONValue) -> String? {
        let value = field["value"] ?? .null
        if value.isNull { return nil }
        switch field["type"]?.stringValue {
        case "date": return value.doubleValue.map(millis) ?? value.cell
        case "int64": return integer(value)
        case "double": return value.doubleValue.map(number) ?? value.cell
        case "bytes", "asset": return bytes(value)
        default: return value.cell
        }
    }

    /// An integer as its exact digits, never through Double (which holds 2^53 + 1 as 2^53): a JSON
    /// number, the digit string the store writes past 2^53, or a boolean as 1/0.
    public static func integer(_ value: JSONValue) -> String {
        switch value {
        case let .int(whole): return String(whole)
        case let .bool(flag): return flag ? "1" : "0"
        case let .string(text): return Int64(text).map { String($0) } ?? text
        case let .double(number): return Int64(exactly: number).map { String($0) } ?? value.cell
        default: return value.cell
        }
    }

    /// Base64 data as its bytes, written one way (any padding or line breaks in the input dropped).
    public static func bytes(_ value: JSONValue) -> String {
        guard let text = value.stringValue, let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else { return value.cell }
        return data.base64EncodedString()
    }

    /// A cloud date (seconds since 1970) as the store writes it: UTC text to the nearest
    /// millisecond, in integers (a `Date`'s formatter can print .999 as .998).
    public static func millis(_ seconds: Double) -> String {
        let text = ISOTime.string(seconds: seconds)
        return text.isEmpty ? String(seconds) : text
    }

    public static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    public static func compare(local: [String: Item], cloud: [String: Item]) -> [ZoneReport] {
        var reports: [String: ZoneReport] = [:]
        func report(_ item: Item) -> String {
            let key = "\(item.database) \(item.zone)"
            if reports[key] == nil { reports[key] = ZoneReport(database: item.database, zone: item.zone) }
            return key
        }
        for (key, remote) in cloud {
            let name = String(key.split(separator: "|", maxSplits: 1).last ?? "")
            let zone = report(remote)
            guard let mine = local[key] else {
                reports[zone]?.onlyInCloud.append((name, remote))
                continue
            }
            let differences = Set(mine.fields.keys).union(remote.fields.keys).sorted().compactMap { field -> (String, String?, String?)? in
                let left = mine.fields[field]
                let right = remote.fields[field]
                return left == right ? nil : (field, left, right)
            }
            if differences.isEmpty {
                reports[zone]?.matching += 1
            } else {
                reports[zone]?.differing.append((name, Item(database: remote.database, zone: remote.zone, entity: remote.entity,
                                                            objectID: mine.objectID, fields: mine.fields), differences))
            }
        }
        for (key, mine) in local where cloud[key] == nil {
            let name = String(key.split(separator: "|", maxSplits: 1).last ?? "")
            reports[report(mine)]?.onlyOnDevice.append((name, mine))
        }
        return reports.values.sorted { ($0.database, $0.zone) < ($1.database, $1.zone) }
    }
}
