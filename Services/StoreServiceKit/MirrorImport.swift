import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

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
    /// Record field names by entity, built once per page.
    private var fieldNames: [String: [String]] = [:]

    init(store: PersistentStore) { self.store = store }

    var isEmpty: Bool { accepted.isEmpty }
    var count: Int { accepted.count }

    /// Takes a new record when it can be written directly; false leaves it to the context path.
    /// `zone` is the cloud zone name (kept on shared-store rows only).
    mutating func accept(uuid: String, entity: EntityDescription, fields: [String: JSONValue], zone: String) throws -> Bool {
        let names = fieldNames[entity.name] ?? entity.storedPropertyNames.map(MirrorRecordCoding.fieldName)
        fieldNames[entity.name] = names
        var values: [SQLValue] = []
        values.reserveCapacity(names.count)
        for (position, attribute) in entity.attributes.enumerated() {
            let value = MirrorRecordCoding.attributeValue(fields[names[position]]?["value"], type: attribute.type)
            if value.isNull && !attribute.optional { return false }
            guard let stored = try? AttributeCoding.storageValue(value, for: attribute, entity: entity.name) else { return false }
            values.append(stored)
        }
        var targets: [String?] = []
        for (number, relationship) in entity.toOneRelationships.enumerated() {
            guard let target = fields[names[entity.position(ofToOne: number)]]?["value"]?.stringValue else {
                if !relationship.optional { return false }
                targets.append(nil)
                values.append(.null)
                continue
            }
            if let kind = acceptedEntity[target] {
                guard kind == relationship.destination else { return false }
            } else {
                let cacheKey = relationship.destination + "/" + target
                if storedKeys[cacheKey] == nil {
                    storedKeys[cacheKey] = .some(try MirrorState(store).primaryKey(entity: relationship.destination, uuid: target))
                }
                guard case let .some(.some(key)) = storedKeys[cacheKey] else { return false }
                values.append(.integer(key))
                targets.append(nil)
                continue
            }
            targets.append(target)
            values.append(.null)
        }
        accepted.append(Accepted(entity: entity, uuid: uuid, zone: store.scope == .shared ? zone : nil, values: values, targets: targets))
        acceptedEntity[uuid] = entity.name
        return true
    }

    /// Inserts the accepted rows and their history inside the caller's transaction; returns the
    /// remote-change notice to publish once it commits.
    func write(router: StoreRouter, logger: Logger) throws -> RemoteChangeNotice? {
        guard !accepted.isEmpty else { return nil }
        // Permanent IDs per entity, as a save allocates them (Z_PRIMARYKEY style).
        var keys: [String: Int64] = [:]
        var firstKey: [String: Int64] = [:]
        for (entity, members) in Dictionary(grouping: accepted, by: \.entity.name) {
            firstKey[entity] = try store.allocatePrimaryKeys(entity, count: members.count)
        }
        var next = firstKey
        for record in accepted {
            keys[record.uuid] = next[record.entity.name]!
            next[record.entity.name]! += 1
        }
        let token = try store.beginHistoryTransaction(author: SaveOperation.syncAuthor, contextName: CloudMirror.importContextName)
        var history = HistoryChanges()
        var changedNames = ChangedPropertyNames()
        var changedIDs: [String] = []
        changedIDs.reserveCapacity(accepted.count)
        for record in accepted {
            var values = record.values
            for (number, target) in record.targets.enumerated() {
                guard let target else { continue }
                values[record.entity.position(ofToOne: number)] = .integer(keys[target]!)
            }
            let key = keys[record.uuid]!
            try store.insert(record.entity, row: .init(primaryKey: key, version: 1, uuid: record.uuid, zone: record.zone, values: values))
            history.append(kind: .insert, entity: record.entity.name, primaryKey: key, uuid: record.uuid,
                           changedJSON: changedNames.json(record.entity, values.map { $0 != .null }))
            changedIDs.append(store.objectID(record.entity.name, key).uri)
            CrashPoint.reached("mirror.midImport")
        }
        try store.writeHistory(token: token, history)
        // The line a context save logs for its new objects, so imports show in the routing log.
        logger.info("store routing", ["mode": .string(router.mode.rawValue), "context": .string(CloudMirror.importContextID),
                                      "decisions": ["\(store.name).\(StoreRouter.Reason.assigned.rawValue)": .int(accepted.count)]])
        return RemoteChangeNotice(store: store.name, storeUUID: store.uuid, token: Int(token), author: SaveOperation.syncAuthor,
                                  contextName: CloudMirror.importContextName, changedObjectIDs: changedIDs)
    }
}
