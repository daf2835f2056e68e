import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// What `context.save` answers: where each new object went and why, what was written, how
/// conflicts were merged, and the history transaction of each store.
public struct SaveResult: Codable, Sendable {
    /// Where a new object went and why (the reason's detail is in the store-routing log line).
    public struct Inserted: Codable, Sendable {
        public var temporaryID: String
        public var objectID: String
        public var store: String
        public var reason: StoreRouter.Reason
    }
    /// New objects that went to one store for one reason, in insertion order: `objectIDs[i]` is
    /// the permanent ID of `temporaryIDs[i]` (`context.save` with `report: "grouped"`). For bulk
    /// saves: 2 strings per object instead of an object with 4, which clients parse much faster.
    public struct InsertedGroup: Codable, Sendable {
        public var store: String
        public var reason: StoreRouter.Reason
        public var temporaryIDs: [String]
        public var objectIDs: [String]
    }
    public struct Merged: Codable, Sendable {
        public var objectID: String
        public var policy: MergePolicy
        /// Properties written from the context.
        public var written: [String]
        /// The context's edits that were not written (the store's value won, or the row was gone).
        public var dropped: [String]
        public var oldVersion: Int
        public var newVersion: Int?
    }
    public struct Transaction: Codable, Sendable {
        public var store: String
        public var storeUUID: String
        public var token: Int
    }
    public var inserted: [Inserted]?
    public var insertedGroups: [InsertedGroup]?
    public var updated: [String]? = []
    public var deleted: [String]? = []
    public var insertedCount = 0
    public var updatedCount = 0
    public var deletedCount = 0
    public var merged: [Merged] = []
    public var transactions: [Transaction] = []
    /// New shared-store objects outside any share zone (seed 002's stray inserts): saved, but the
    /// cloud mirror cannot export them (the shared database has no default zone of the user's own).
    public var unexportable: [String]?
}

/// How much a save result lists: `objects` (default; one entry per new object), `grouped` (new
/// objects grouped by store and reason), `summary` (counts and transactions only: for bulk
/// imports, whose clients would otherwise parse thousands of IDs they do not need).
public enum SaveReport: String, Sendable, Codable, CaseIterable {
    case objects, grouped, summary

    func shape(_ result: SaveResult, inserted: [SaveResult.Inserted], groups: [SaveResult.InsertedGroup]) -> SaveResult {
        var result = result
        switch self {
        case .objects: result.inserted = inserted
        case .grouped: result.insertedGroups = groups
        case .summary:
            result.updated = nil
            result.deleted = nil
        }
        return result
    }
}

/// The `remoteChange` event: a store changed (by another connection, or later the cloud mirror).
public struct RemoteChangeNotice: Codable, Sendable {
    public var store: String
    public var storeUUID: String
    public var token: Int
    public var author: String
    public var contextName: String?
    public var changedObjectIDs: [String]
}

extension RemoteChangeNotice: JSONTextWritable {
    /// Written by hand, keys sorted as the event hub's encoder writes them: an import's notice
    /// names a page's thousand objects, and `JSONEncoder` was a thirtieth of applying a page.
    public func writeJSON(to out: inout String) -> Bool {
        out += #"{"author":"#
        JSONWriter.appendString(author, to: &out)
        out += #","changedObjectIDs":["#
        for (index, id) in changedObjectIDs.enumerated() {
            if index > 0 { out += "," }
            JSONWriter.appendString(id, to: &out)
        }
        out += "]"
        if let contextName {
            out += #","contextName":"#
            JSONWriter.appendString(contextName, to: &out)
        }
        out += #","store":"#
        JSONWriter.appendString(store, to: &out)
        out += #","storeUUID":"#
        JSONWriter.appendString(storeUUID, to: &out)
        out += #","token":"# + String(token) + "}"
        return true
    }
}

/// One save of one context: validate, route, check stores and permissions, then write every
/// store's part in its own SQLite transaction, all committed only when every part succeeded.
struct SaveOperation {
    let context: ManagedObjectContext
    let stores: StoreSet
    let router: StoreRouter
    let logger: Logger
    var report: SaveReport = .objects

    var model: ManagedObjectModel { stores.model }
    /// The author the cloud mirror writes with.
    static let syncAuthor = "sync"

    func run() throws -> (SaveResult, [RemoteChangeNotice]) {
        let committed = try write()
        return committed.update(context)
    }

    /// What a save committed, for bringing its context up to date (`update`). The update reads
    /// and writes only the context, so a client's save makes it after the store lock is
    /// released: renaming and clearing a thousand objects was a sixth of a bulk save's turn of
    /// the lock, which the device's mirror waited out.
    struct Committed {
        fileprivate var result: SaveResult
        fileprivate(set) var notices: [RemoteChangeNotice]
        fileprivate var finalStates: [(object: ContextObject, values: [SQLValue], version: Int64, store: Int?, id: ObjectID?)] = []
        fileprivate var forgotten: [String] = []

        /// Applies the save to its context (new objects get their permanent IDs and stores,
        /// saved values become snapshots, deleted ones are forgotten).
        func update(_ context: ManagedObjectContext) -> (SaveResult, [RemoteChangeNotice]) {
            for (object, values, version, store, id) in finalStates {
                if object.isInserted { object.store = store }
                if let id { context.rename(object, to: id) }
                object.isInserted = false
                object.routing = nil
                object.snapshotValues = values
                object.clearChanges()
                object.version = version
            }
            for uri in forgotten { context.forget(uri) }
            return (result, notices)
        }
    }

    /// Validates, routes and writes the save, committing every store's part; the context is
    /// not changed (`Committed.update` does that).
    func write() throws -> Committed {
        let pending = context.pending
        let inserted = pending.filter { $0.isInserted && !$0.isDeleted }
        let deleted = pending.filter { !$0.isInserted && $0.isDeleted }
        let updated = pending.filter { !$0.isInserted && !$0.isDeleted && $0.hasPropertyChanges }
        let discarded = pending.filter { $0.isInserted && $0.isDeleted }
        guard !(inserted.isEmpty && deleted.isEmpty && updated.isEmpty) else {
            return Committed(result: report.shape(SaveResult(), inserted: [], groups: []), notices: [], forgotten: discarded.map(\.uri))
        }
        try validate(inserted: inserted, updated: updated)
        // Stores of relationship destinations outside the context, each URI parsed once (a batch
        // of events usually points at one session).
        var outside: [String: Int] = [:]
        for object in inserted + updated {
            for relationship in object.entity.toOneRelationships {
                guard let uri = object.value(relationship.name).string, outside[uri] == nil, context.lookup(uri) == nil,
                      let id = ObjectID(uri: uri), let uuid = id.storeUUID, let index = stores.index(uuid: uuid) else { continue }
                outside[uri] = index
            }
        }
        let decisions = try route(inserted: inserted, updated: updated, outside: outside)
        func storeIndex(of object: ContextObject) -> Int { object.isInserted ? decisions[ObjectIdentifier(object)]!.store : object.store! }
        func storeIndex(ofTarget uri: String) throws -> Int {
            if let target = context.lookup(uri) { return storeIndex(of: target) }
            guard let index = outside[uri] else { throw StoreError.unknownObject(uri, "it is not in a loaded store.") }
            return index
        }

        // Cross-store relationships are refused before anything is written (133010).
        for object in inserted + updated {
            let own = storeIndex(of: object)
            for (number, relationship) in object.entity.toOneRelationships.enumerated() {
                let position = object.entity.position(ofToOne: number)
                guard object.isInserted || object.change(at: position) != nil,
                      let target = object.value(at: position).string else { continue }
                let other = try storeIndex(ofTarget: target)
                if other != own {
                    throw StoreError.coreData(.crossStoreRelationship, 133010, StoreError.crossStoreMessage, [
                        "objectID": .string(object.uri), "relationship": .string("\(object.entity.name).\(relationship.name)"),
                        "destinationID": .string(target), "store": .string(stores.list[own].name),
                        "destinationStore": .string(stores.list[other].name),
                        "hint": .string("Both ends of a relationship must be in one store: assign the new object to \(stores.list[other].name), or move it with object.moveToStore."),
                    ])
                }
            }
        }

        let zones = try checkPermissions(inserted: inserted, updated: updated, deleted: deleted, storeIndex: storeIndex)

        let order = Set((inserted + updated + deleted).map(storeIndex)).sorted()
        var result = SaveResult()
        var tokens: [Int: Int64] = [:]
        var changedIDs: [Int: [String]] = [:]
        var conflicts: [JSONValue] = []
        var newIDs: [String: ObjectID] = [:]
        var finalStates: [(ContextObject, [SQLValue], Int64)] = []
        var forgotten: [String] = []
        var insertedList: [SaveResult.Inserted] = []
        var insertedGroups: [SaveResult.InsertedGroup] = []
        // Each store's history changes, written as one packed row before the COMMIT.
        var history: [Int: HistoryChanges] = [:]
        var changedNames = ChangedPropertyNames()

        func token(_ index: Int) throws -> Int64 {
            if let token = tokens[index] { return token }
            let token = try stores.list[index].beginHistoryTransaction(author: context.author, contextName: context.name)
            tokens[index] = token
            return token
        }

        do {
            for index in order { try stores.list[index].database.beginImmediate() }
            // Permanent IDs for the new objects, per store and entity (Z_PRIMARYKEY style).
            var groups: [String: [ContextObject]] = [:]
            for object in inserted where object.id.isTemporary {
                groups["\(storeIndex(of: object))/\(object.entity.name)", default: []].append(object)
            }
            for (_, members) in groups.sorted(by: { $0.key < $1.key }) {
                let store = stores.list[storeIndex(of: members[0])]
                var key = try store.allocatePrimaryKeys(members[0].entity.name, count: members.count)
                for object in members {
                    newIDs[object.uri] = store.objectID(object.entity.name, key)
                    key += 1
                }
            }
            func finalURI(_ uri: String) -> String { newIDs[uri]?.uri ?? uri }
            // Destinations already checked in this save (a batch of events usually shares one session).
            var verified: [String: Int64] = [:]
            func storedValue(_ value: SQLValue, relationship: RelationshipDescription, store: PersistentStore) throws -> SQLValue {
                guard let uri = value.string else { return .null }
                if let id = newIDs[uri] { return .integer(id.primaryKey!) }
                if let key = verified[uri] { return .integer(key) }
                guard let id = ObjectID(uri: uri), let key = id.primaryKey else { throw StoreError.unknownObject(uri, "not a saved object.") }
                if context.lookup(uri)?.isInserted != true, try !store.exists(relationship.destination, primaryKey: key) {
                    throw StoreError.unknownObject(uri, "the destination of \(relationship.name) is no longer in the \(store.name) store (deleted).")
                }
                verified[uri] = key
                return .integer(key)
            }

            for object in inserted {
                let index = storeIndex(of: object)
                let store = stores.list[index]
                let id = newIDs[object.uri] ?? object.id
                let entity = object.entity
                // Row values (relationships as primary keys) and the context's values after the
                // save (relationships as final URIs), by position.
                var values: [SQLValue] = []
                values.reserveCapacity(entity.storedPropertyNames.count)
                var contextValues: [SQLValue] = values
                var setProperties: [Bool] = []
                setProperties.reserveCapacity(entity.storedPropertyNames.count)
                for position in entity.attributes.indices {
                    let value = object.value(at: position)
                    values.append(value)
                    contextValues.append(value)
                    setProperties.append(value != .null)
                }
                for (number, relationship) in entity.toOneRelationships.enumerated() {
                    let value = object.value(at: entity.position(ofToOne: number))
                    values.append(try storedValue(value, relationship: relationship, store: store))
                    contextValues.append(value.string.map { .text(finalURI($0)) } ?? .null)
                    setProperties.append(value != .null)
                }
                do {
                    try store.insert(object.entity, row: .init(primaryKey: id.primaryKey!, version: 1, uuid: object.uuid,
                                                               zone: zones[object.uri] ?? object.zone, values: values))
                } catch let error as SQLiteError where error.isConstraintViolation {
                    throw StoreError.coreData(.uniquenessConstraint, 133021,
                                              "A \(object.entity.name) with uuid \(object.uuid) already exists in the \(store.name) store; fetch it (predicate uuid == '…') and update it instead of inserting.",
                                              ["objectID": .string(object.uri), "uuid": .string(object.uuid), "store": .string(store.name)])
                }
                _ = try token(index)
                history[index, default: HistoryChanges()].append(kind: .insert, entity: entity.name, primaryKey: id.primaryKey!, uuid: object.uuid,
                                                                 changedJSON: changedNames.json(entity, setProperties))
                CrashPoint.reached("store.midSave")
                let permanentURI = id.uri
                if store.scope == .shared, zones[object.uri] ?? object.zone == nil {
                    if result.unexportable == nil { result.unexportable = [] }
                    result.unexportable!.append(permanentURI)
                }
                changedIDs[index, default: []].append(permanentURI)
                let decision = decisions[ObjectIdentifier(object)]!
                result.insertedCount += 1
                if report == .grouped {
                    if let group = insertedGroups.lastIndex(where: { $0.store == store.name && $0.reason == decision.reason }) {
                        insertedGroups[group].temporaryIDs.append(object.uri)
                        insertedGroups[group].objectIDs.append(permanentURI)
                    } else {
                        insertedGroups.append(.init(store: store.name, reason: decision.reason, temporaryIDs: [object.uri], objectIDs: [permanentURI]))
                    }
                } else if report == .objects {
                    insertedList.append(.init(temporaryID: object.uri, objectID: permanentURI, store: store.name, reason: decision.reason))
                }
                finalStates.append((object, contextValues, 1))
            }

            for object in updated {
                let index = storeIndex(of: object)
                let store = stores.list[index]
                let key = object.id.primaryKey!
                guard let row = try store.read(object.entity, primaryKey: key) else {
                    if context.mergePolicy == .error {
                        conflicts.append(conflict(object, stored: nil, storedVersion: nil))
                    } else {
                        result.merged.append(.init(objectID: object.uri, policy: context.mergePolicy, written: [],
                                                   dropped: object.changes.keys.sorted(), oldVersion: Int(object.version), newVersion: nil))
                        forgotten.append(object.uri)
                    }
                    continue
                }
                let stored = ManagedObjectContext.contextValueDictionary(row, entity: object.entity, store: store)
                var writes = object.changes
                if row.version != object.version {
                    switch context.mergePolicy.resolve(snapshot: object.snapshot, changes: object.changes, stored: stored) {
                    case .conflict:
                        conflicts.append(conflict(object, stored: stored, storedVersion: row.version))
                        continue
                    case let .write(properties):
                        writes = properties
                    }
                }
                let effective = writes.filter { stored[$0.key] != $0.value }
                var final = stored
                var newVersion = row.version
                if !effective.isEmpty {
                    newVersion = row.version + 1
                    var columns: [(String, SQLValue)] = []
                    for name in object.entity.storedPropertyNames {
                        guard let value = effective[name] else { continue }
                        if let relationship = object.entity.relationship(name) {
                            columns.append((name, try storedValue(value, relationship: relationship, store: store)))
                            final[name] = value.string.map { .text(finalURI($0)) } ?? .null
                        } else {
                            columns.append((name, value))
                            final[name] = value
                        }
                    }
                    try store.update(object.entity, primaryKey: key, changes: columns, version: newVersion)
                    _ = try token(index)
                    history[index, default: HistoryChanges()].append(.init(kind: .update, entity: object.entity.name, primaryKey: key,
                                                                           uuid: object.uuid, changed: effective.keys.sorted(), tombstone: nil))
                    changedIDs[index, default: []].append(object.uri)
                    result.updated?.append(object.uri)
                    result.updatedCount += 1
                }
                if row.version != object.version {
                    result.merged.append(.init(objectID: object.uri, policy: context.mergePolicy, written: writes.keys.sorted(),
                                               dropped: object.changes.keys.filter { writes[$0] == nil }.sorted(),
                                               oldVersion: Int(object.version), newVersion: Int(newVersion)))
                }
                finalStates.append((object, object.entity.storedPropertyNames.map { final[$0] ?? .null }, newVersion))
            }

            if model.hasOneToOnePairs {
                let edits = (inserted + updated).compactMap { object -> PairEdit? in
                    guard let key = newIDs[object.uri]?.primaryKey ?? object.id.primaryKey else { return nil }
                    return PairEdit(object: object, store: storeIndex(of: object), key: key)
                }
                try pairOneToOne(edits, history: &history, changedIDs: &changedIDs)
            }

            var deletedKeys: Set<String> = []
            for object in deleted {
                let index = storeIndex(of: object)
                let store = stores.list[index]
                guard let row = try store.read(object.entity, primaryKey: object.id.primaryKey!) else {
                    forgotten.append(object.uri)
                    continue
                }
                if row.version != object.version {
                    switch context.mergePolicy {
                    case .error:
                        conflicts.append(conflict(object, stored: ManagedObjectContext.contextValueDictionary(row, entity: object.entity, store: store),
                                                  storedVersion: row.version))
                        continue
                    case .rollback:
                        result.merged.append(.init(objectID: object.uri, policy: .rollback, written: [], dropped: ["(delete)"],
                                                   oldVersion: Int(object.version), newVersion: Int(row.version)))
                        continue
                    default: break
                    }
                }
                _ = try token(index)
                let gone = try deleteCascading(object.entity, primaryKey: row.primaryKey, storeIndex: index,
                                               history: &history[index, default: HistoryChanges()], deletedKeys: &deletedKeys, changedIDs: &changedIDs)
                result.deleted?.append(contentsOf: gone)
                result.deletedCount += gone.count
                forgotten.append(contentsOf: gone)
            }

            if !conflicts.isEmpty {
                throw StoreError.coreData(.mergeConflict, 133020, StoreError.mergeMessage, [
                    "conflicts": .array(conflicts), "mergePolicy": .string(context.mergePolicy.rawValue),
                    "hint": .string("Another save changed these objects since this context read them. Call context.refresh to read the stored values (your edits are kept and saving again overwrites), or context.rollback and redo the edits, or open the context with another mergePolicy."),
                ])
            }
            try checkRelationshipCounts(changedIDs: changedIDs, context: pending)
            for (index, changes) in history { try stores.list[index].writeHistory(token: try token(index), changes) }
            for index in order { try stores.list[index].database.execute("COMMIT") }
            CrashPoint.reached("store.afterSaveCommit")
            result = report.shape(result, inserted: insertedList, groups: insertedGroups)
        } catch {
            for index in order where stores.list[index].database.isInTransaction {
                try? stores.list[index].database.execute("ROLLBACK")
            }
            throw error
        }

        // Committed: what the context update needs, worked out while the save's state is at hand.
        var committed = Committed(result: SaveResult(), notices: [], forgotten: forgotten + discarded.map(\.uri))
        committed.finalStates.reserveCapacity(finalStates.count)
        for (object, values, version) in finalStates {
            committed.finalStates.append((object, values, version, object.isInserted ? decisions[ObjectIdentifier(object)]?.store : nil,
                                          newIDs[object.uri]))
        }

        if let stray = result.unexportable {
            logger.notice("new shared-store objects have no share zone and cannot be exported",
                          ["count": .int(stray.count), "first": .string(stray[0]),
                           "hint": "assign new objects to the private store, or relate them to an object in a share"])
        }
        var notices: [RemoteChangeNotice] = []
        for index in order {
            guard let token = tokens[index] else { continue }
            let store = stores.list[index]
            result.transactions.append(.init(store: store.name, storeUUID: store.uuid, token: Int(token)))
            notices.append(RemoteChangeNotice(store: store.name, storeUUID: store.uuid, token: Int(token), author: context.author,
                                              contextName: context.name, changedObjectIDs: changedIDs[index] ?? []))
        }
        committed.result = result
        committed.notices = notices
        return committed
    }
}

/// The JSON list of set properties of new objects, built once per distinct combination: a batch
/// of inserts repeats the same few lists.
struct ChangedPropertyNames {
    private var cache: [String: [[Bool]: String]] = [:]

    mutating func json(_ entity: EntityDescription, _ set: [Bool]) -> String {
        if let text = cache[entity.name]?[set] { return text }
        let names = entity.storedPropertyNames.indices.filter { set[$0] }.map { entity.storedPropertyNames[$0] }
        let text = PersistentStore.jsonArray(names)
        cache[entity.name, default: [:]][set] = text
        return text
    }
}
