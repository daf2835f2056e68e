import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// An object as one context sees it: identity, store, the snapshot it read, and its unsaved edits.
/// Values are in storage form; a to-one relationship's value is the destination's object-ID URI
/// as text (or null), so temporary destinations work before the save.
///
/// Values live in arrays by stored-property position (`entity.storedPropertyNames`), not in
/// dictionaries: a 1,000-object save reads every property of every object several times, and
/// hashing property names was a large share of it. `snapshot` and `changes` are dictionary views
/// for the paths that want names (merge policies, conflicts, refresh).
package final class ContextObject {
    // Its stored properties skip the runtime's exclusivity checks (`@exclusivity(unchecked)`):
    // a save reads and writes each new object's properties some twenty-five times, and each
    // dynamic check cost about 85 instructions, 3% of a bulk save. Only the owning context's
    // thread touches an object, and no code passes two of its properties inout at once.
    @exclusivity(unchecked) fileprivate(set) var id: ObjectID
    /// `id.uri`, kept because it is the context's key and used on every hot path.
    @exclusivity(unchecked) package fileprivate(set) var uri: String
    package let entity: EntityDescription
    /// The store: from an assign (temporary IDs) or the permanent ID.
    @exclusivity(unchecked) package var store: Int?
    @exclusivity(unchecked) var isInserted: Bool
    @exclusivity(unchecked) package var isDeleted = false
    @exclusivity(unchecked) var version: Int64
    /// The values the context read (defaults for a new object), by position.
    @exclusivity(unchecked) var snapshotValues: [SQLValue]
    /// Unsaved edits by position; nil where the property was not edited.
    @exclusivity(unchecked) private(set) var changeValues: [SQLValue?]
    @exclusivity(unchecked) private(set) var changeCount = 0
    let uuid: String
    @exclusivity(unchecked) var zone: String?
    /// Why the object has its store, when it got one before the save (assign, obtainPermanentIDs).
    @exclusivity(unchecked) package var routing: StoreRouter.Decision?
    /// Registration order, so saves and routing are deterministic.
    let sequence: Int

    /// `changes`: edits by position already made against `snapshotValues` (none when nil), and
    /// how many there are.
    init(id: ObjectID, entity: EntityDescription, store: Int?, isInserted: Bool, version: Int64,
         snapshotValues: [SQLValue], changes: (values: [SQLValue?], count: Int)? = nil, uuid: String, zone: String?, sequence: Int) {
        self.id = id
        self.uri = id.uri
        self.entity = entity
        self.store = store
        self.isInserted = isInserted
        self.version = version
        self.snapshotValues = snapshotValues
        self.changeValues = changes?.values ?? Array(repeating: nil, count: entity.storedPropertyNames.count)
        self.changeCount = changes?.count ?? 0
        self.uuid = uuid
        self.zone = zone
        self.sequence = sequence
    }

    convenience init(id: ObjectID, entity: EntityDescription, store: Int?, isInserted: Bool, version: Int64,
                     snapshot: [String: SQLValue], uuid: String, zone: String?, sequence: Int) {
        self.init(id: id, entity: entity, store: store, isInserted: isInserted, version: version,
                  snapshotValues: entity.storedPropertyNames.map { snapshot[$0] ?? .null }, uuid: uuid, zone: zone, sequence: sequence)
    }

    func value(_ name: String) -> SQLValue { entity.position(of: name).map(value(at:)) ?? .null }
    func value(at position: Int) -> SQLValue { changeValues[position] ?? snapshotValues[position] }
    func change(_ name: String) -> SQLValue? { entity.position(of: name).flatMap { changeValues[$0] } }
    func change(at position: Int) -> SQLValue? { changeValues[position] }

    /// Records an edit (nil removes it); an edit back to the snapshot's value is no edit.
    func setChange(_ value: SQLValue?, at position: Int) {
        let new = value == snapshotValues[position] ? nil : value
        if changeValues[position] == nil, new != nil { changeCount += 1 }
        if changeValues[position] != nil, new == nil { changeCount -= 1 }
        changeValues[position] = new
    }

    func clearChanges() {
        guard changeCount > 0 else { return }
        for position in changeValues.indices { changeValues[position] = nil }
        changeCount = 0
    }

    var hasPropertyChanges: Bool { changeCount > 0 }
    var hasChanges: Bool { isInserted || isDeleted || changeCount > 0 }

    /// The snapshot by property name.
    var snapshot: [String: SQLValue] {
        get {
            var values: [String: SQLValue] = [:]
            for (position, name) in entity.storedPropertyNames.enumerated() { values[name] = snapshotValues[position] }
            return values
        }
        set { snapshotValues = entity.storedPropertyNames.map { newValue[$0] ?? .null } }
    }

    /// The unsaved edits by property name.
    var changes: [String: SQLValue] {
        get {
            var values: [String: SQLValue] = [:]
            guard changeCount > 0 else { return values }
            for (position, name) in entity.storedPropertyNames.enumerated() {
                if let value = changeValues[position] { values[name] = value }
            }
            return values
        }
        set {
            for position in changeValues.indices { changeValues[position] = nil }
            changeCount = 0
            for (name, value) in newValue {
                guard let position = entity.position(of: name) else { continue }
                changeValues[position] = value
                changeCount += 1
            }
        }
    }
}

/// One unit of work (NSManagedObjectContext) owned by one connection: inserted, fetched and
/// edited objects, a merge policy, and the author/name its saves write into history. Its hot
/// properties skip the runtime's exclusivity checks, as `ContextObject`'s do (one thread at a time).
package final class ManagedObjectContext {
    let id: String
    var name: String?
    var author: String
    var mergePolicy: MergePolicy
    @exclusivity(unchecked) private(set) var objects: [String: ContextObject] = [:]
    @exclusivity(unchecked) private var nextSequence = 0
    @exclusivity(unchecked) private var uuids = RandomUUIDSource()

    package init(id: String, name: String?, author: String, mergePolicy: MergePolicy) {
        self.id = id
        self.name = name
        self.author = author
        self.mergePolicy = mergePolicy
    }

    var pending: [ContextObject] { objects.values.filter(\.hasChanges).sorted { $0.sequence < $1.sequence } }
    var registered: [ContextObject] { objects.values.sorted { $0.sequence < $1.sequence } }

    func lookup(_ uri: String) -> ContextObject? { objects[uri] }

    func register(_ object: ContextObject) { objects[object.uri] = object }

    /// Makes room for `additional` more objects at once (a bulk insert, instead of growing and
    /// rehashing the table as it fills).
    func reserve(_ additional: Int) { objects.reserveCapacity(objects.count + additional) }

    func forget(_ uri: String) { objects.removeValue(forKey: uri) }

    /// `uri`: the new ID's URI when the caller has it already (a save makes each one once).
    func rename(_ object: ContextObject, to id: ObjectID, uri: String? = nil) {
        objects.removeValue(forKey: object.uri)
        object.id = id
        object.uri = uri ?? id.uri
        objects[object.uri] = object
    }

    /// Renames many objects at once (a save's new objects). When they are at least half of the
    /// registered objects the table is built anew under the final URIs: removing a key from
    /// Swift's open-addressing table rehashes the keys that follow it, so a thousand removals
    /// and insertions cost several times one insertion per object.
    func rename(_ renames: [(object: ContextObject, id: ObjectID, uri: String)]) {
        guard renames.count * 2 >= objects.count else {
            for (object, id, uri) in renames { rename(object, to: id, uri: uri) }
            return
        }
        for (object, id, uri) in renames {
            object.id = id
            object.uri = uri
        }
        var table: [String: ContextObject] = [:]
        table.reserveCapacity(objects.count)
        for object in objects.values { table[object.uri] = object }
        objects = table
    }

    /// The table of registered objects as it will be once the save's new objects have their
    /// permanent URIs (`renamed`), built without changing the context: a large save builds it
    /// while its rows are still being stepped, and adopts it (`rename(_:table:)`) after it
    /// commits. Nil when `renamed` is not every new object still inserted.
    func table(renaming renamed: some Sequence<(object: ContextObject, uri: String)>) -> [String: ContextObject]? {
        var table: [String: ContextObject] = [:]
        table.reserveCapacity(objects.count)
        for object in objects.values where !object.isInserted || object.isDeleted { table[object.uri] = object }
        for (object, uri) in renamed { table[uri] = object }
        return table.count == objects.count ? table : nil
    }

    /// Renames the save's new objects with `table` built for them before (`table(renaming:)`);
    /// as `rename(_:)` when objects were registered since (the table would lack them).
    func rename(_ renames: [(object: ContextObject, id: ObjectID, uri: String)], table: [String: ContextObject]) {
        guard table.count == objects.count else { return rename(renames) }
        for (object, id, uri) in renames {
            object.id = id
            object.uri = uri
        }
        objects = table
    }

    /// Renames and points every registered relationship value at the new ID (used when a new
    /// object gets its permanent ID before the save).
    func renameRewritingReferences(_ object: ContextObject, to id: ObjectID) {
        let old = SQLValue.text(object.uri)
        rename(object, to: id)
        let new = SQLValue.text(id.uri)
        for other in objects.values {
            for position in other.changeValues.indices where other.changeValues[position] == old { other.setChange(new, at: position) }
            for position in other.snapshotValues.indices where other.snapshotValues[position] == old { other.snapshotValues[position] = new }
        }
    }

    func takeSequence() -> Int {
        nextSequence += 1
        return nextSequence
    }

    /// Drops every unsaved change: inserted objects go, edits and deletions are undone.
    func rollback() {
        for object in objects.values {
            if object.isInserted { objects.removeValue(forKey: object.uri); continue }
            object.clearChanges()
            object.isDeleted = false
        }
    }

    /// Re-reads registered saved objects from their stores (refresh(_:mergeChanges: true)):
    /// snapshots and versions become the stored ones, unsaved edits stay on top, objects deleted
    /// in the store are forgotten. Returns how many were refreshed and forgotten.
    func refresh(_ uris: [String]?, stores: StoreSet) throws -> (refreshed: Int, forgotten: Int) {
        let targets = try uris.map { try $0.map { uri in
            guard let object = objects[uri] else { throw StoreError.unknownObject(uri, "it is not registered in this context.") }
            return object
        } } ?? registered
        var refreshed = 0, forgotten = 0
        for object in targets where !object.isInserted {
            guard let index = object.store, let key = object.id.primaryKey,
                  let row = try stores.list[index].read(object.entity, primaryKey: key) else {
                forget(object.uri)
                forgotten += 1
                continue
            }
            object.snapshotValues = Self.contextValues(row, entity: object.entity, store: stores.list[index])
            object.version = row.version
            object.zone = row.zone
            for position in object.changeValues.indices { object.setChange(object.change(at: position), at: position) }
            refreshed += 1
        }
        return (refreshed, forgotten)
    }

    /// Forgets every registered object (Core Data's reset): frees memory between pages.
    func reset() { objects.removeAll() }

    /// Inserts a new object with a temporary ID and the model's default values.
    package func insert(entity: EntityDescription, uuid: String? = nil, zone: String? = nil) -> ContextObject {
        let object = newObject(entity: entity, changes: nil, uuid: uuid, zone: zone)
        register(object)
        return object
    }

    /// Inserts a new object with the model's default values and `values` on top: all of them
    /// are checked and converted before anything is registered, so a refused value leaves the
    /// context as it was.
    package func insert(entity: EntityDescription, uuid: String?, zone: String?, values: some Sequence<(key: String, value: JSONValue)>,
                        model: ManagedObjectModel, stores: StoreSet?) throws -> ContextObject {
        let prepared = PreparedValues(values, entity: entity, model: model, converter: &converter, defaults: defaults.of(entity))
        return try insert(entity: entity, uuid: uuid, zone: zone, prepared: prepared, stores: stores)
    }

    /// Inserts a new object with values converted before (`PreparedValues`): the temporary IDs
    /// they point at are checked here, then the conversion's failure, if any, is thrown; a
    /// refused object leaves the context as it was.
    func insert(entity: EntityDescription, uuid: String?, zone: String?, prepared: PreparedValues, stores: StoreSet?) throws -> ContextObject {
        for target in prepared.temporaryTargets { try checkRegistered(target) }
        if let failure = prepared.failure { throw failure }
        let object = newObject(entity: entity, changes: (prepared.changes, prepared.count), uuid: uuid, zone: zone)
        register(object)
        guard !prepared.manyToMany.isEmpty else { return object }
        do {
            try setManyToMany(prepared.manyToMany, on: object, stores: stores)
        } catch {
            forget(object.uri)
            throw error
        }
        return object
    }

    private func newObject(entity: EntityDescription, changes: (values: [SQLValue?], count: Int)?, uuid: String?, zone: String?) -> ContextObject {
        // One UUID serves as the temporary ID's token and the stable business id.
        let token = uuids.next()
        return ContextObject(id: .temporary(entity: entity.name, token: token), entity: entity, store: nil, isInserted: true, version: 0,
                             snapshotValues: defaults.of(entity), changes: changes, uuid: uuid ?? token, zone: zone, sequence: takeSequence())
    }

    @exclusivity(unchecked) private var defaults = EntityDefaults()
    @exclusivity(unchecked) private var converter = ValueConverter()

    /// The object for `uri`: registered here, or read from its store and registered.
    package func object(_ uri: String, stores: StoreSet) throws -> ContextObject {
        if let object = objects[uri] { return object }
        guard let id = ObjectID(uri: uri) else {
            throw ServiceError(.invalidField, "'\(uri.prefix(120))' is not an object ID; object IDs look like x-coredata://<storeUUID>/<Entity>/p<n> or x-coredata:///<Entity>/t<UUID>.",
                               details: ["objectID": .string(String(uri.prefix(200)))])
        }
        guard case let .permanent(storeUUID, entityName, key) = id else {
            throw StoreError.unknownObject(uri, "this temporary ID was not inserted in this context (temporary IDs belong to the context that inserted them; after a save use the permanent ID the save returned).")
        }
        guard let entity = stores.model.entity(named: entityName) else { throw StoreError.unknownEntity(entityName, model: stores.model) }
        guard let storeIndex = stores.index(uuid: storeUUID) else {
            throw StoreError.unknownObject(uri, "no loaded store has identifier \(storeUUID) (store.list shows the loaded stores).")
        }
        let store = stores.list[storeIndex]
        guard store.holds(entityName), let row = try store.read(entity, primaryKey: key) else {
            throw StoreError.unknownObject(uri, "it is not in the \(store.name) store (never saved, or deleted).")
        }
        let object = ContextObject(id: id, entity: entity, store: storeIndex, isInserted: false, version: row.version,
                                   snapshotValues: Self.contextValues(row, entity: entity, store: store), uuid: row.uuid,
                                   zone: row.zone, sequence: takeSequence())
        register(object)
        return object
    }

    /// A stored row's values in context form by position (relationships as object-ID URIs).
    static func contextValues(_ row: PersistentStore.StoredRow, entity: EntityDescription, store: PersistentStore) -> [SQLValue] {
        var values = row.values
        for (index, relationship) in entity.toOneRelationships.enumerated() {
            let position = entity.position(ofToOne: index)
            if let key = values[position].int64 { values[position] = .text(store.objectID(relationship.destination, key).uri) }
        }
        return values
    }

    /// The same by property name (merge policies and conflict reports).
    static func contextValueDictionary(_ row: PersistentStore.StoredRow, entity: EntityDescription, store: PersistentStore) -> [String: SQLValue] {
        let values = contextValues(row, entity: entity, store: store)
        var named: [String: SQLValue] = [:]
        for (position, name) in entity.storedPropertyNames.enumerated() { named[name] = values[position] }
        return named
    }

    /// Checks and converts `values` for `object`, then applies them all (or none). `stores`:
    /// for many-to-many values, whose current links are read from the store.
    package func set(_ values: some Sequence<(key: String, value: JSONValue)>, on object: ContextObject, model: ManagedObjectModel,
                     stores: StoreSet? = nil) throws {
        guard !object.isDeleted else {
            throw StoreError.unknownObject(object.uri, "it was deleted in this context; rollback the context to undo the deletion.")
        }
        var converted: [(Int, SQLValue)] = []
        converted.reserveCapacity(object.entity.storedPropertyNames.count)
        let manyToMany = try converter.convert(values, entity: object.entity, model: model, temporaryTarget: checkRegistered) { converted.append(($0, $1)) }
        if !manyToMany.isEmpty { try setManyToMany(manyToMany, on: object, stores: stores) }
        for (position, value) in converted { object.setChange(value, at: position) }
    }

    private func checkRegistered(_ temporaryID: String) throws {
        guard objects[temporaryID] == nil else { return }
        throw StoreError.unknownObject(temporaryID, "this temporary ID was not inserted in this context.")
    }

    private func setManyToMany(_ values: [ManyToManyValue], on object: ContextObject, stores: StoreSet?) throws {
        guard let stores else {
            throw ServiceError(.invalidField, "\(object.entity.name).\(values[0].0) is many-to-many and cannot be set here.",
                               details: ["entity": .string(object.entity.name), "property": .string(values[0].0)])
        }
        for (key, value, end) in values.sorted(by: { $0.0 < $1.0 }) {
            try setManyToMany(key, value, on: object, end: end, stores: stores)
        }
    }

    /// The wire form of an object as this context sees it (pending edits included).
    func record(_ object: ContextObject, stores: StoreSet) throws -> ManagedObject {
        var values: [String: JSONValue] = [:]
        for attribute in object.entity.attributes {
            values[attribute.name] = AttributeCoding.jsonValue(object.value(attribute.name), type: attribute.type)
        }
        for relationship in object.entity.toOneRelationships {
            values[relationship.name] = object.value(relationship.name).string.map { .string($0) } ?? .null
        }
        for relationship in object.entity.relationships where relationship.toMany {
            guard let end = stores.model.manyToMany(object.entity.name, relationship.name) else { continue }
            values[relationship.name] = .array(try manyToManyTargets(of: object, end, stores: stores).map { .string($0) })
        }
        return ManagedObject(objectID: object.uri, entity: object.entity.name,
                             store: object.store.map { stores.list[$0].name }, version: Int(object.version),
                             uuid: object.uuid, zoneKey: object.zone, values: values,
                             isInserted: object.isInserted, isDeleted: object.isDeleted, hasChanges: object.hasChanges)
    }
}

extension ManagedObject {
    init(objectID: String, entity: String, store: String?, version: Int, uuid: String, zoneKey: String?, values: [String: JSONValue],
         isInserted: Bool?, isDeleted: Bool?, hasChanges: Bool?) {
        let (zone, zoneOwner) = Self.zoneParts(zoneKey)
        self.init(objectID: objectID, entity: entity, store: store, version: version, uuid: uuid, zone: zone, zoneOwner: zoneOwner,
                  values: values, isInserted: isInserted, isDeleted: isDeleted, hasChanges: hasChanges)
    }

    /// The zone name and owner of a row's zone key (`owner/zoneName`).
    static func zoneParts(_ key: String?) -> (name: String?, owner: String?) {
        guard let key else { return (nil, nil) }
        guard let zone = ZoneID(key: key) else { return (key, nil) }
        return (zone.zoneName, zone.ownerName)
    }
}
