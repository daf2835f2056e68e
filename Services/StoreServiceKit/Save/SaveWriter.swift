import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// The writing half of a save, once it is validated, routed and allowed: each store's part in
/// that store's SQLite transaction — permanent IDs, inserted, updated and deleted rows, merges
/// by the context's policy — with every change recorded through the store's
/// `StoreChangeRecorder`. The caller commits (`finish`, then COMMIT) or rolls back.
struct SaveWriter {
    let operation: SaveOperation
    let routes: SaveRoutes
    /// Share zones of shared-store objects (`checkPermissions`).
    let zones: [String: String]

    var result = SaveResult()
    /// Each store's recorder by store index, made on the store's first change: an array, as the
    /// writer reaches it twice for every object.
    var recorders: [StoreChangeRecorder?]
    /// Whether `insert` has begun each store's history transaction: asked for every new object,
    /// and reading the recorder's token would copy the recorder.
    private var historyBegun: [Bool]
    var conflicts: [JSONValue] = []
    /// New objects' permanent IDs by position in the save's new objects (`newID(of:)`). Their
    /// URIs are made as each row is written (`insert`), where the saving thread waits for the
    /// row stepper anyway.
    private var newIDs: [ObjectID?] = []
    /// Each saved object's values and version after the save, the store a new one was routed
    /// to, and its new permanent ID.
    var finalStates: [SaveOperation.FinalState] = []
    var forgotten: [String] = []
    var insertedList: [SaveResult.Inserted] = []
    var insertedGroups: [SaveResult.InsertedGroup] = []
    /// Destinations already checked in this save (a batch of events usually shares one session).
    private var verified: [String: Int64] = [:]
    private var deletedKeys: Set<String> = []
    /// The new objects' rows, stepped by another thread in a large save (`SaveRows`).
    private var rows = SaveRows(newObjects: 0)

    struct NewID {
        var id: ObjectID
        var uri: String
        var primaryKey: Int64? { id.primaryKey }
    }

    init(operation: SaveOperation, routes: SaveRoutes, zones: [String: String]) {
        self.operation = operation
        self.routes = routes
        self.zones = zones
        recorders = Array(repeating: nil, count: operation.stores.list.count)
        historyBegun = Array(repeating: false, count: operation.stores.list.count)
    }

    private var context: ManagedObjectContext { operation.context }
    private var stores: StoreSet { operation.stores }

    func storeIndex(of object: ContextObject) -> Int { Self.storeIndex(of: object, routes: routes) }

    /// A new object's routed store, else the store it was saved in.
    static func storeIndex(of object: ContextObject, routes: SaveRoutes) -> Int {
        object.isInserted ? routes.store(of: object) : object.store!
    }

    /// Makes store `index`'s recorder on first use.
    private mutating func prepareRecorder(_ index: Int) {
        if recorders[index] == nil {
            recorders[index] = StoreChangeRecorder(store: stores.list[index], author: context.author, contextName: context.name)
        }
    }

    /// Records a change in store `index`'s transaction. The recorder is changed in place in the
    /// array: a copy taken out and put back would copy its whole history on every change.
    mutating func record(_ index: Int, _ change: (inout StoreChangeRecorder) throws -> Void) throws {
        prepareRecorder(index)
        try change(&recorders[index]!)
    }

    /// The objects each store's recorder saw changed, by store index.
    var changedObjectIDs: [Int: [String]] {
        var changed: [Int: [String]] = [:]
        for (index, recorder) in recorders.enumerated() { if let recorder { changed[index] = recorder.changedObjectIDs } }
        return changed
    }

    /// Permanent IDs for the new objects, per store and entity (Z_PRIMARYKEY style), kept by
    /// the objects' positions in `inserted` (the routes' positions).
    mutating func allocatePermanentIDs(_ inserted: [ContextObject]) throws {
        // A save's new objects are of a few entities: their groups are a list, searched from
        // the last one used.
        var groups: [(store: Int, entity: EntityDescription, positions: [Int])] = []
        var last = -1
        for (position, object) in inserted.enumerated() where object.id.isTemporary {
            let store = storeIndex(of: object)
            if last < 0 || groups[last].store != store || groups[last].entity !== object.entity {
                last = groups.firstIndex { $0.store == store && $0.entity === object.entity } ?? {
                    groups.append((store, object.entity, []))
                    return groups.count - 1
                }()
            }
            groups[last].positions.append(position)
        }
        newIDs = Array(repeating: nil, count: inserted.count)
        for group in groups.sorted(by: { ($0.store, $0.entity.name) < ($1.store, $1.entity.name) }) {
            let store = stores.list[group.store]
            var key = try store.allocatePrimaryKeys(group.entity.name, count: group.positions.count)
            for position in group.positions {
                newIDs[position] = store.objectID(group.entity.name, key)
                key += 1
            }
        }
    }

    /// A new object's permanent ID, when this save gives it one.
    func newID(of object: ContextObject) -> ObjectID? {
        routes.position(of: object).flatMap { newIDs[$0] }
    }

    /// The permanent ID this save gives the object registered as `uri`, if any.
    private func newID(_ uri: String) -> ObjectID? {
        context.lookup(uri).flatMap(newID(of:))
    }

    private func finalURI(_ uri: String) -> String { newID(uri)?.uri ?? uri }

    /// The last destination a new row named, as stored and as its final URI: a batch of new
    /// events usually names one session.
    private var lastDestination: (uri: String, stored: SQLValue, final: SQLValue)?

    /// A new row's to-one value as stored (`storedValue`) and as the context keeps it after
    /// the save (the destination's final URI).
    private mutating func destination(_ value: SQLValue, relationship: RelationshipDescription,
                                      store: PersistentStore) throws -> (stored: SQLValue, final: SQLValue) {
        guard let uri = value.string else { return (.null, .null) }
        if let last = lastDestination, last.uri == uri { return (last.stored, last.final) }
        let found = (stored: try storedValue(value, relationship: relationship, store: store), final: SQLValue.text(finalURI(uri)))
        lastDestination = (uri, found.stored, found.final)
        return found
    }

    /// A to-one relationship's value as its row stores it: the destination's primary key,
    /// checked to be there.
    private mutating func storedValue(_ value: SQLValue, relationship: RelationshipDescription, store: PersistentStore) throws -> SQLValue {
        guard let uri = value.string else { return .null }
        if let new = newID(uri) { return .integer(new.primaryKey!) }
        if let key = verified[uri] { return .integer(key) }
        guard let id = ObjectID(uri: uri), let key = id.primaryKey else { throw StoreError.unknownObject(uri, "not a saved object.") }
        // The check reads the store's connection, which rows in flight are using.
        try waitForRows()
        if context.lookup(uri)?.isInserted != true, try !store.exists(relationship.destination, primaryKey: key) {
            throw StoreError.unknownObject(uri, "the destination of \(relationship.name) is no longer in the \(store.name) store (deleted).")
        }
        verified[uri] = key
        return .integer(key)
    }

    /// Writes the new object at `position` in the save's new objects (`inserted`).
    mutating func insert(_ object: ContextObject, position: Int) throws {
        let index = routes.store(at: position)
        let store = stores.list[index]
        let new = newIDs[position].map { NewID(id: $0, uri: $0.uri) }
        let id = new?.id ?? object.id
        let permanentURI = new?.uri ?? object.uri
        let entity = object.entity
        // Row values (relationships as primary keys) and the context's values after the save
        // (relationships as final URIs), by position.
        var values: [SQLValue] = []
        values.reserveCapacity(entity.storedPropertyNames.count)
        // Reserved apart: a copy of `values` would share its buffer until the first append copied it.
        var contextValues: [SQLValue] = []
        contextValues.reserveCapacity(entity.storedPropertyNames.count)
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
            let (stored, final) = try destination(value, relationship: relationship, store: store)
            values.append(stored)
            contextValues.append(final)
            setProperties.append(value != .null)
        }
        // Zones are only inferred for the shared store's objects: most saves have none.
        let zone = zones.isEmpty ? object.zone : zones[object.uri] ?? object.zone
        // The history transaction begins on the store's connection: before its first row.
        if !historyBegun[index] {
            try waitForRows()
            try record(index) { try $0.begin() }
            historyBegun[index] = true
        }
        do {
            let statement = try rows.statement(entity, store: index, of: store)
            try rows.insert(.init(primaryKey: id.primaryKey!, version: 1, uuid: object.uuid, zone: zone, values: values),
                            statement: statement, object: object, store: index)
        } catch let failure as SaveRows.Failure {
            throw refusal(failure)
        }
        try record(index) { try $0.inserted(entity, primaryKey: id.primaryKey!, uuid: object.uuid, uri: permanentURI, setProperties: setProperties) }
        CrashPoint.reached("store.midSave")
        if store.scope == .shared, zone == nil {
            if result.unexportable == nil { result.unexportable = [] }
            result.unexportable!.append(permanentURI)
        }
        report(inserted: object, permanentURI: permanentURI, store: store, reason: routes.reason(at: position))
        finalStates.append((object, contextValues, 1, index, new))
    }

    /// Makes ready for `count` new objects' rows: a large save steps them on another thread.
    mutating func beginInserts(count: Int) {
        finalStates.reserveCapacity(count)
        if operation.report == .objects { insertedList.reserveCapacity(count) }
        rows = SaveRows(newObjects: count)
    }

    /// Waits until the rows handed to another thread are stepped; throws the save's refusal
    /// when SQLite refused one.
    mutating func waitForRows() throws {
        do { try rows.wait() } catch { throw refusal(error) }
    }

    /// Whether another thread steps the new objects' rows (a large save).
    var isPipelined: Bool { rows.isPipelined }

    /// Gives the row stepper up once its rows are stepped. Call before the save commits or rolls
    /// back, on every path: the stepper uses the store's connection until then.
    mutating func endInserts() {
        rows.end()
    }

    /// The save's error for a row SQLite refused: a uuid already in the store is Core Data's
    /// uniqueness constraint, named with the object.
    private func refusal(_ failure: SaveRows.Failure) -> Error {
        guard failure.error.isConstraintViolation else { return failure.error }
        let store = stores.list[failure.store]
        return StoreError.coreData(.uniquenessConstraint, 133021,
                                   "A \(failure.entity) with uuid \(failure.uuid) already exists in the \(store.name) store; fetch it (predicate uuid == '…') and update it instead of inserting.",
                                   ["objectID": .string(failure.objectID), "uuid": .string(failure.uuid), "store": .string(store.name)])
    }

    /// The new object in the result, as the save's report asks for.
    private mutating func report(inserted object: ContextObject, permanentURI: String, store: PersistentStore, reason: RoutingReason) {
        // A link is the row behind a many-to-many value, not an object the app inserted.
        if object.entity.name.hasPrefix("_"), stores.model.isLinkEntity(object.entity.name) { return }
        result.insertedCount += 1
        switch operation.report {
        case .grouped:
            if let group = insertedGroups.lastIndex(where: { $0.store == store.name && $0.reason == reason }) {
                insertedGroups[group].temporaryIDs.append(object.uri)
                insertedGroups[group].objectIDs.append(permanentURI)
            } else {
                insertedGroups.append(.init(store: store.name, reason: reason, temporaryIDs: [object.uri], objectIDs: [permanentURI]))
            }
        case .objects:
            insertedList.append(.init(temporaryID: object.uri, objectID: permanentURI, store: store.name, reason: reason))
        case .summary:
            break
        }
    }

    mutating func update(_ object: ContextObject) throws {
        let index = storeIndex(of: object)
        let store = stores.list[index]
        let key = object.id.primaryKey!
        let policy = context.mergePolicy
        guard let row = try store.read(object.entity, primaryKey: key) else {
            if policy == .error {
                conflicts.append(operation.conflict(object, stored: nil, storedVersion: nil))
            } else {
                result.merged.append(.init(objectID: object.uri, policy: policy, written: [],
                                           dropped: object.changes.keys.sorted(), oldVersion: Int(object.version), newVersion: nil))
                forgotten.append(object.uri)
            }
            return
        }
        let stored = ManagedObjectContext.contextValueDictionary(row, entity: object.entity, store: store)
        var writes = object.changes
        if row.version != object.version {
            switch policy.resolve(snapshot: object.snapshot, changes: object.changes, stored: stored) {
            case .conflict:
                conflicts.append(operation.conflict(object, stored: stored, storedVersion: row.version))
                return
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
            try record(index) { try $0.updated(entity: object.entity.name, primaryKey: key, uuid: object.uuid, changed: effective.keys.sorted()) }
            result.updated?.append(object.uri)
            result.updatedCount += 1
        }
        if row.version != object.version {
            result.merged.append(.init(objectID: object.uri, policy: policy, written: writes.keys.sorted(),
                                       dropped: object.changes.keys.filter { writes[$0] == nil }.sorted(),
                                       oldVersion: Int(object.version), newVersion: Int(newVersion)))
        }
        finalStates.append((object, object.entity.storedPropertyNames.map { final[$0] ?? .null }, newVersion, nil, nil))
    }

    mutating func delete(_ object: ContextObject) throws {
        let index = storeIndex(of: object)
        let store = stores.list[index]
        guard let row = try store.read(object.entity, primaryKey: object.id.primaryKey!) else {
            forgotten.append(object.uri)
            return
        }
        if row.version != object.version {
            switch context.mergePolicy {
            case .error:
                conflicts.append(operation.conflict(object, stored: ManagedObjectContext.contextValueDictionary(row, entity: object.entity, store: store),
                                                    storedVersion: row.version))
                return
            case .rollback:
                result.merged.append(.init(objectID: object.uri, policy: .rollback, written: [], dropped: ["(delete)"],
                                           oldVersion: Int(object.version), newVersion: Int(row.version)))
                return
            default: break
            }
        }
        prepareRecorder(index)
        let gone = try operation.deleteCascading(object.entity, primaryKey: row.primaryKey, storeIndex: index,
                                                 changes: &recorders[index]!, deletedKeys: &deletedKeys)
        // Links are the store's rows behind many-to-many values, not the app's objects.
        let visible = gone.filter { uri in ObjectID(uri: uri).map { !stores.model.isLinkEntity($0.entity) } ?? true }
        result.deleted?.append(contentsOf: visible)
        result.deletedCount += visible.count
        forgotten.append(contentsOf: gone)
    }

    /// Refuses the save when the merge policy found conflicts (133020), before anything commits.
    func checkConflicts() throws {
        guard !conflicts.isEmpty else { return }
        throw StoreError.coreData(.mergeConflict, 133020, StoreError.mergeMessage, [
            "conflicts": .array(conflicts), "mergePolicy": .string(context.mergePolicy.rawValue),
            "hint": .string("Another save changed these objects since this context read them. Call context.refresh to read the stored values (your edits are kept and saving again overwrites), or context.rollback and redo the edits, or open the context with another mergePolicy."),
        ])
    }

    /// Writes each store's history row; call before the COMMITs. The notices, in store order,
    /// go out once every store has committed.
    mutating func finish(order: [Int]) throws -> [RemoteChangeNotice] {
        var notices: [RemoteChangeNotice] = []
        for index in order {
            guard let notice = try recorders[index]?.finish() else { continue }
            result.transactions.append(.init(store: notice.store, storeUUID: notice.storeUUID, token: notice.token))
            notices.append(notice)
        }
        return notices
    }
}
