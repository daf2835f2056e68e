import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// A fetched page's records that are new to this device, written straight into rows and one
/// history transaction (author `sync`), without a managed object context.
///
/// Most of a page is new records: a device receiving another's work. Through a context each
/// one cost a context object, a routing decision, a rename to its permanent ID and a dictionary
/// of values, more than its row. A record goes this way only when nothing about it needs a
/// context: no row, no metadata and no queued change here; values that convert exactly as
/// `context.set` would convert them (else the context path reports the problem as before);
/// relationships that point at rows already stored or at new records earlier in the page.
/// Anything else is left to the context path, which runs after this one, so its objects can
/// point at these rows.
struct MirrorImport {
    /// A record accepted for the direct path: its row's values, relationships still as targets.
    private struct Accepted {
        var entity: EntityDescription
        var uuid: String
        var zone: String?
        var values: [SQLValue]
        /// Per to-one relationship: nil (cleared), or the target's uuid.
        var targets: [String?]
    }

    let store: PersistentStore
    private var accepted: [Accepted] = []
    /// New records accepted so far, by uuid: their entity (a target must be of the right one).
    private var acceptedEntity: [String: String] = [:]
    /// Targets already stored, looked up once (a page of events names one session again and again).
    private var storedKeys: [String: Int64?] = [:]

    init(store: PersistentStore) { self.store = store }

    /// A record's row values as far as they need no store: its attributes converted exactly as
    /// `context.set` converts them, its to-one relationships as the related records' names.
    /// Worked out off the applying thread (`MirrorEngine.ZoneChanges`), so it only resolves names.
    struct Prepared: Sendable {
        /// Per stored property; to-one slots are filled in by `accept`.
        var values: [SQLValue]
        /// Per to-one relationship: the related record's name, or nil (cleared).
        var targets: [String?]

        /// nil when the record needs a context: a value that does not convert, or a required
        /// attribute or relationship missing (the context path reports those as it always has).
        /// `fields`: per stored property, its field's value (`FieldLayout`).
        init?(entity: EntityDescription, fields: [JSONValue?]) {
            values = []
            values.reserveCapacity(fields.count)
            for (position, attribute) in entity.attributes.enumerated() {
                guard let stored = MirrorImport.storageValue(fields[position], attribute: attribute),
                      !(stored.isNull && !attribute.optional) else { return nil }
                values.append(stored)
            }
            targets = []
            for (number, relationship) in entity.toOneRelationships.enumerated() {
                let target = fields[entity.position(ofToOne: number)]?.stringValue
                if target == nil && !relationship.optional { return nil }
                targets.append(target)
                values.append(.null)
            }
        }
    }

    /// Which record field holds each of an entity's stored properties, and the same in field
    /// name order, to read a record's values by position.
    struct FieldLayout: Sendable {
        /// Per stored property, its field's name.
        let names: [String]
        /// Field names in byte order, each with its stored property's position (records are
        /// written in this order too: `MirrorRecordCoding.TextCache`).
        let sorted: [(name: String, position: Int)]

        /// Per data attribute's position, its asset field's name (`CD_<name>_ckAsset`), which
        /// holds the value instead when it is large.
        let assetNames: [Int: String]

        init(_ entity: EntityDescription) {
            names = entity.storedPropertyNames.map(MirrorRecordCoding.fieldName)
            var assetNames: [Int: String] = [:]
            for (position, attribute) in entity.attributes.enumerated() where attribute.type.isData {
                assetNames[position] = MirrorRecordCoding.assetFieldName(attribute.name)
            }
            self.assetNames = assetNames
            // Swift's order on strings: byte order for the ASCII names stored form has.
            sorted = (names.enumerated().map { ($0.element, $0.offset) } + assetNames.map { ($0.value, $0.key) }).sorted { $0.name < $1.name }
        }

        /// Per stored property, its field's value in a tree of fields.
        func values(_ fields: [String: JSONValue]) -> [JSONValue?] {
            names.enumerated().map { position, name in fields[name]?["value"] ?? assetNames[position].flatMap { fields[$0]?["value"] } }
        }

        /// Per stored property, its field's value among fields read from stored form (in the
        /// same order, so both lists are walked once, without hashing a name).
        func values(_ fields: [StoredFields.Field]) -> [JSONValue?] {
            var values = [JSONValue?](repeating: nil, count: names.count)
            var next = 0
            for field in fields {
                while next < sorted.count, sorted[next].name < field.name { next += 1 }
                guard next < sorted.count else { break }
                if sorted[next].name == field.name { values[sorted[next].position] = field.value; next += 1 }
            }
            return values
        }
    }

    /// A field's value as its attribute stores it, as `MirrorRecordCoding.attributeValue` then
    /// `AttributeCoding.storageValue` would make it, without the wire value in between; nil
    /// where `storageValue` would refuse the value.
    static func storageValue(_ value: JSONValue?, attribute: AttributeDescription) -> SQLValue? {
        guard let value, !value.isNull else { return .null }
        switch attribute.type {
        case .string:
            if let text = value.stringValue {
                if let allowed = attribute.allowedValues, !allowed.contains(text) { return nil }
                return .text(text)
            }
        case .integer: if case let .int(integer) = value { return .integer(Int64(integer)) }
        case .boolean: if let flag = value.intValue.map({ $0 != 0 }) ?? value.boolValue { return .integer(flag ? 1 : 0) }
        case .double: if let number = value.doubleValue { return .real(number) }
        case .integer16, .integer32, .float, .decimal, .binary, .transformable, .uuid, .uri: break
        case .date:
            // The written text is canonical but for dates outside what the store accepts (a
            // negative year): those are refused as `context.set` refuses them.
            if let seconds = value.doubleValue { return AttributeCoding.canonicalDate(MirrorRecordCoding.iso(seconds: seconds)).map { .text($0) } }
        }
        // A value of another type: whatever `context.set` makes of it (an ISO date written as a
        // string is a date; most are refused, and the record is reported: `applyRefusing`).
        return try? AttributeCoding.storageValue(MirrorRecordCoding.attributeValue(value, type: attribute.type), for: attribute, entity: "")
    }

    /// Takes a new record when it can be written directly; false leaves it to the context path.
    /// `zone` is the cloud zone name (kept on shared-store rows only).
    /// `linkZone`: the zone its relationships resolve within (`CoreDataMapping.linkZone(of:store:user:)`).
    mutating func accept(uuid: String, entity: EntityDescription, prepared: Prepared?, zone: String, linkZone: ZoneID?) throws -> Bool {
        guard var prepared else { return false }
        for (number, relationship) in entity.toOneRelationships.enumerated() {
            guard let target = prepared.targets[number] else { continue }
            if let kind = acceptedEntity[target] {
                guard kind == relationship.destination else { return false }
                continue
            }
            let cacheKey = relationship.destination + "/" + target + "/" + (linkZone?.key ?? "")
            if storedKeys[cacheKey] == nil {
                storedKeys[cacheKey] = .some(try StoreBookkeeping(store).primaryKey(entity: relationship.destination, uuid: target,
                                                                                      linkedFrom: linkZone))
            }
            guard case let .some(.some(key)) = storedKeys[cacheKey] else { return false }
            prepared.values[entity.position(ofToOne: number)] = .integer(key)
            prepared.targets[number] = nil
        }
        accepted.append(Accepted(entity: entity, uuid: uuid, zone: store.scope == .shared ? zone : nil, values: prepared.values, targets: prepared.targets))
        acceptedEntity[uuid] = entity.name
        return true
    }

    /// Inserts the accepted rows inside the caller's write (`StoreEngine.write`), recording them
    /// through its `changes`.
    func write(_ changes: inout StoreChangeRecorder, router: StoreRouter, logger: Logger) throws {
        guard !accepted.isEmpty else { return }
        // Permanent IDs per entity, as a save allocates them (Z_PRIMARYKEY style).
        var keys: [String: Int64] = [:]
        var firstKey: [String: Int64] = [:]
        // Counted, not grouped: grouping copied every accepted record with its values.
        var counts: [String: Int] = [:]
        for record in accepted { counts[record.entity.name, default: 0] += 1 }
        for (entity, count) in counts {
            firstKey[entity] = try store.allocatePrimaryKeys(entity, count: count)
        }
        var next = firstKey
        for record in accepted {
            keys[record.uuid] = next[record.entity.name]!
            next[record.entity.name]! += 1
        }
        try changes.begin()
        for record in accepted {
            var values = record.values
            for (number, target) in record.targets.enumerated() {
                guard let target else { continue }
                values[record.entity.position(ofToOne: number)] = .integer(keys[target]!)
            }
            let key = keys[record.uuid]!
            try store.insert(record.entity, row: .init(primaryKey: key, version: 1, uuid: record.uuid, zone: record.zone, values: values))
            try changes.inserted(record.entity, primaryKey: key, uuid: record.uuid, setProperties: values.map { $0 != .null })
            CrashPoint.reached("mirror.midImport")
        }
        // The line a context save logs for its new objects, so imports show in the routing log.
        logger.info("store routing", ["mode": .string(router.mode.rawValue), "context": .string(CoreDataMapping.importContextID),
                                      "decisions": ["\(store.name).\(RoutingReason.assigned.rawValue)": .int(accepted.count)]])
    }
}
