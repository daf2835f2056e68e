import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

extension StoreService {
    /// While the device mirrors, only the mirror speaks for the cloud: a client may not write as
    /// the mirror or set what the cloud decides (share metadata, permissions). Without a mirror
    /// there is no cloud to contradict, and clients may play its part (tests of the hooks do).
    func refuseWhileMirroring(_ condition: Bool, what: String, why: String, field: String) throws {
        guard condition, companion?.mirrors == true else { return }
        throw ServiceError(.permissionFailure, "\(what) is refused on a device that mirrors to a cloud: \(why). Save with another author; share metadata comes from share.accept and sync.fetch.",
                           details: ["field": .string(field)])
    }

    func registerStoreOperations(in registry: inout OperationRegistry) {
        registerContextOperations(in: &registry)
        registerObjectOperations(in: &registry)
        registerObjectIdentityOperations(in: &registry)
        registerFetchOperations(in: &registry)
        registerStoreStateOperations(in: &registry)
        registerShareStateOperations(in: &registry)
        registerDeviceOperations(in: &registry)
    }

    /// Contexts: open, save, rollback, refresh, reset, close.
    private func registerContextOperations(in registry: inout OperationRegistry) {
        registry.register("context.open", params: ContextOpenParams.self, summary: "Opens a context (unit of work) with a merge policy.") { [self] params, request in
            let engine = try engine()
            let author = params.author ?? "app"
            try refuseWhileMirroring(author == SaveOperation.syncAuthor, what: "A context with author '\(author)'",
                                     why: "that author is the cloud mirror's own: its saves skip the share permission check and are never exported",
                                     field: "params.author")
            let policy = params.mergePolicy ?? .error
            let id = try engine.contexts(request.connection).open(name: params.name, author: author, mergePolicy: policy)
            return ContextOpenResult(context: id, name: params.name, author: author, mergePolicy: policy)
        }
        registry.register("context.save", params: SaveParams.self, summary: "Saves the context's changes in one transaction.") { [self] params, request in
            let engine = try engine()
            let (result, _) = try engine.contexts(request.connection).with(params.context) { context in
                // The store lock for the writes only: the context is brought up to date after it
                // (under the context's own lock), so the device's mirror is not kept waiting.
                // The notices go out under the lock, so every subscriber hears of commits in
                // their order, whichever saving thread gets on first after it.
                let committed = try engine.coordinator.withStores { stores in
                    let committed = try SaveOperation(context: context, stores: stores, router: engine.router, logger: engine.logger,
                                                      report: params.report ?? .objects).write()
                    engine.publish(committed.notices, from: request.connection)
                    return committed
                }
                return committed.update(context)
            }
            return result
        }
        registry.register("context.rollback", params: ContextParams.self, summary: "Drops the context's unsaved changes.") { [self] params, request in
            try engine().contexts(request.connection).with(params.context) { context in
                context.rollback()
                return ContextStateResult(context: params.context, registeredObjects: context.registered.count)
            }
        }
        registry.register("context.refresh", params: RefreshParams.self, summary: "Re-reads registered objects from the stores; unsaved edits stay.") { [self] params, request in
            try engine().withContext(request.connection, params.context) { context, stores in
                let (refreshed, forgotten) = try context.refresh(params.objectIDs, stores: stores)
                return RefreshResult(refreshed: refreshed, forgotten: forgotten)
            }
        }
        registry.register("context.reset", params: ContextParams.self, summary: "Forgets every registered object.") { [self] params, request in
            try engine().contexts(request.connection).with(params.context) { context in
                context.reset()
                return ContextStateResult(context: params.context, registeredObjects: 0)
            }
        }
        registry.register("context.close", params: ContextParams.self, summary: "Closes the context; unsaved changes are dropped.") { [self] params, request in
            try engine().contexts(request.connection).close(params.context)
            return ClosedResult(closed: true)
        }

    }

    /// Objects: insert, assign, set, delete.
    private func registerObjectOperations(in registry: inout OperationRegistry) {
        registry.register("object.insert", params: InsertParams.self, summary: "Inserts new objects (temporary IDs); optionally assigns a store.") { [self] params, request in
            let engine = try engine()
            return try engine.withContext(request.connection, params.context, lockingStores: false) { context, stores in
                try Self.insert(params, into: context, stores: stores)
            }
        }
        registry.register("object.assign", params: AssignParams.self, summary: "Chooses the store of a new object (Core Data's assign(_:to:)).") { [self] params, request in
            try engine().withContext(request.connection, params.context) { context, stores in
                let target = try stores.index(named: params.store)
                let store = stores.list[target]
                if let id = ObjectID(uri: params.objectID), !id.isTemporary {
                    // Rule 1: a permanent ID never moves, even to the store it is already in.
                    let original = id.storeUUID.flatMap { stores.index(uuid: $0) }.map { stores.list[$0].url } ?? "unknown store \(id.storeUUID ?? "")"
                    throw ServiceError(.invalidReassignment, StoreError.reassignMessage, details: [
                        "objectID": .string(params.objectID), "newStoreURL": .string(store.url), "originalStoreURL": .string(original),
                        "exception": "NSInvalidArgumentException",
                        "hint": .string("assign is only for new objects. To move a saved object use object.moveToStore (a delete plus an insert)."),
                    ])
                }
                let object = try context.object(params.objectID, stores: stores)
                if let current = object.id.storeUUID {
                    throw ServiceError(.invalidReassignment, StoreError.reassignMessage, details: [
                        "objectID": .string(object.uri), "newStoreURL": .string(store.url), "originalStoreURL": .string(current)])
                }
                guard store.holds(object.entity.name) else { throw Self.entityNotInStore(object.entity.name, store) }
                object.store = target
                object.routing = .init(store: target, reason: .assigned, detail: "assigned to \(store.name)")
                return AssignResult(objectID: object.uri, store: store.name)
            }
        }
        registry.register("object.set", params: SetParams.self, summary: "Sets attributes and to-one relationships.") { [self] params, request in
            try engine().withContext(request.connection, params.context) { context, stores in
                let object = try context.object(params.objectID, stores: stores)
                try context.set(params.values.members, on: object, model: stores.model, stores: stores)
                return try context.record(object, stores: stores)
            }
        }
        registry.register("object.delete", params: ObjectParams.self, summary: "Marks an object deleted (applied at save).") { [self] params, request in
            guard let contextID = params.context else { throw ServiceError(.missingField, "'object.delete' needs context.", details: ["field": "params.context"]) }
            return try engine().withContext(request.connection, contextID) { context, stores in
                let object = try context.object(params.objectID, stores: stores)
                if object.isInserted { context.forget(object.uri) } else { object.isDeleted = true }
                context.forgetInsertedLinks(of: object, model: stores.model)
                return DeleteResult(objectID: object.uri, isDeleted: true)
            }
        }
    }

    /// object.insert: one object or a list, all or none (a refused item leaves the context as it was).
    private static func insert(_ params: InsertParams, into context: ManagedObjectContext, stores: StoreSet) throws -> InsertResult {
        let single = params.objects == nil
        var items = params.objects ?? []
        if single {
            guard let entity = params.entity else {
                throw ServiceError(.missingField, "'object.insert' needs entity (or objects: [{entity, values}]).", details: ["field": "params.entity"])
            }
            items = [InsertItem(entity: entity, values: params.values, store: params.store, uuid: params.uuid, zone: params.zone, zoneOwner: params.zoneOwner)]
        }
        let prepared = PreparedBatch(items, model: stores.model)
        var created: [ContextObject] = []
        created.reserveCapacity(items.count)
        context.reserve(items.count)
        // The last entity checked: a batch is usually of one entity.
        var checked: EntityDescription?
        do {
            for (index, item) in items.enumerated() {
                do {
                    let entity: EntityDescription
                    if let checked, checked.name == item.entity {
                        entity = checked
                    } else {
                        guard let named = stores.model.entity(named: item.entity) else { throw StoreError.unknownEntity(item.entity, model: stores.model) }
                        if let sides = stores.model.linkSides(of: named.name) {
                            throw ServiceError(.invalidField, "\(named.name) is the store's link table of the many-to-many \(sides.a.entity).\(sides.a.relationship); set that relationship instead.",
                                               details: ["entity": .string(named.name)])
                        }
                        entity = named
                        checked = named
                    }
                    let target = try item.store.map { try stores.index(named: $0) }
                    if let target, !stores.list[target].holds(entity.name) { throw Self.entityNotInStore(entity.name, stores.list[target]) }
                    // The uuid is the object's cloud record name: CKRecord.ID's rules, or
                    // every send would meet the server's invalidArguments for it.
                    if let uuid = item.uuid, CloudKitNames.problem(recordName: uuid) != nil {
                        throw ServiceError(.invalidField, "uuid must be 1 to 255 ASCII characters, not starting with '_' (it is the object's cloud record name).",
                                           details: ["field": "params.uuid"])
                    }
                    // Prepared whenever the model has the entity, as it has here.
                    guard let values = prepared[index] else { throw StoreError.unknownEntity(item.entity, model: stores.model) }
                    let object = try context.insert(entity: entity, uuid: item.uuid, zone: item.zoneKey, prepared: values, stores: stores)
                    created.append(object)
                    if let target {
                        object.store = target
                        object.routing = .init(store: target, reason: .assigned, detail: "assigned to \(stores.list[target].name) at insert")
                    }
                } catch let error as ServiceError where !single {
                    var wrapped = error
                    wrapped.wire.details["index"] = .int(index)
                    wrapped.wire.message = "objects[\(index)]: \(error.wire.message) Nothing was inserted."
                    throw wrapped
                }
            }
        } catch {
            for object in created { context.forget(object.uri) }
            throw error
        }
        if params.returnObjectIDs == false { return InsertResult(insertedCount: created.count) }
        return single ? InsertResult(objectID: created[0].uri, insertedCount: 1)
            : InsertResult(objectIDs: created.map(\.uri), insertedCount: created.count)
    }

    /// Objects: reading one, permanent IDs, moves between stores.
    private func registerObjectIdentityOperations(in registry: inout OperationRegistry) {
        registry.register("object.get", params: ObjectParams.self, summary: "One object by ID (as the context sees it, or as stored).") { [self] params, request in
            let engine = try engine()
            if let contextID = params.context {
                return try engine.withContext(request.connection, contextID) { context, stores in
                    try context.record(try context.object(params.objectID, stores: stores), stores: stores)
                }
            }
            return try engine.coordinator.withStores { stores in
                let scratch = ManagedObjectContext(id: "", name: nil, author: "", mergePolicy: .error)
                var record = try scratch.record(try scratch.object(params.objectID, stores: stores), stores: stores)
                record.isInserted = nil
                record.isDeleted = nil
                record.hasChanges = nil
                return record
            }
        }
        registry.register("object.obtainPermanentIDs", params: ObtainParams.self, summary: "Gives new objects permanent IDs now; fixes their store.") { [self] params, request in
            let engine = try engine()
            return try engine.withContext(request.connection, params.context) { context, stores in
                try Self.obtainPermanentIDs(params.objectIDs, context: context, stores: stores, router: engine.router)
            }
        }
        registry.register("object.moveToStore", params: MoveParams.self, summary: "Moves a saved object: delete here, insert a copy there (same uuid).") { [self] params, request in
            try engine().withContext(request.connection, params.context) { context, stores in
                let target = try stores.index(named: params.store)
                let object = try context.object(params.objectID, stores: stores)
                guard !object.isInserted else {
                    throw ServiceError(.invalidField, "\(object.uri) is not saved yet; use object.assign to choose its store.", details: ["objectID": .string(object.uri)])
                }
                guard object.store != target else {
                    throw ServiceError(.invalidField, "\(object.uri) is already in \(stores.list[target].name).", details: ["objectID": .string(object.uri)])
                }
                guard stores.list[target].holds(object.entity.name) else { throw Self.entityNotInStore(object.entity.name, stores.list[target]) }
                let copy = ContextObject(id: .newTemporary(entity: object.entity.name), entity: object.entity, store: target, isInserted: true,
                                         version: 0, snapshotValues: object.entity.storedPropertyNames.indices.map {
                                             // Attributes are copied; relationships would cross stores, so they start empty.
                                             $0 < object.entity.attributes.count ? object.value(at: $0) : .null
                                         }, uuid: object.uuid, zone: nil, sequence: context.takeSequence())
                copy.routing = .init(store: target, reason: .assigned, detail: "moved from \(stores.list[object.store!].name)")
                context.register(copy)
                do {
                    try context.set(params.values?.members ?? [], on: copy, model: stores.model)
                } catch {
                    context.forget(copy.uri)
                    throw error
                }
                object.isDeleted = true
                return MoveResult(objectID: copy.uri, deletedObjectID: object.uri, store: stores.list[target].name)
            }
        }

    }

    /// Fetching and persistent history.
    private func registerFetchOperations(in registry: inout OperationRegistry) {
        registry.register("fetch", params: FetchRequest.self, summary: "Objects of an entity matching a predicate; sorted, paged, from some or all stores.") { [self] params, request in
            let engine = try engine()
            let run = { (stores: StoreSet, context: ManagedObjectContext?) throws -> FetchReply in
                guard let entity = stores.model.entity(named: params.entity) else { throw StoreError.unknownEntity(params.entity, model: stores.model) }
                if params.resultFormat == .rows, context == nil, let text = try Self.writtenRows(params, entity: entity, stores: stores) {
                    return .rows(FetchedRows(columns: FetchRows.columns(entity), rows: FetchRows(text: text)))
                }
                let hits = try FetchExecutor(stores: stores, request: params).run()
                if params.resultFormat == .rows {
                    if let context { FetchExecutor.register(hits, entity: entity, in: context, stores: stores) }
                    let rows = FetchRows(hits: hits, entity: entity, stores: stores)
                    return .rows(FetchedRows(columns: FetchRows.columns(entity), rows: rows))
                }
                var objects: [ManagedObject] = []
                objects.reserveCapacity(hits.count)
                for hit in hits {
                    guard let context else { objects.append(try FetchExecutor.record(hit, entity: entity, stores: stores)); continue }
                    let uri = stores.list[hit.store].objectID(entity.name, hit.row.primaryKey).uri
                    if let registered = context.lookup(uri) {
                        objects.append(try context.record(registered, stores: stores))
                    } else {
                        let object = ContextObject(id: ObjectID(uri: uri)!, entity: entity, store: hit.store, isInserted: false, version: hit.row.version,
                                                   snapshotValues: ManagedObjectContext.contextValues(hit.row, entity: entity, store: stores.list[hit.store]),
                                                   uuid: hit.row.uuid, zone: hit.row.zone, sequence: context.takeSequence())
                        context.register(object)
                        objects.append(try context.record(object, stores: stores))
                    }
                }
                return .objects(FetchedObjects(objects: objects))
            }
            if let contextID = params.context {
                return try engine.withContext(request.connection, contextID) { context, stores in try run(stores, context) }
            }
            return try engine.coordinator.withStores { stores in try run(stores, nil) }
        }
        registry.register("fetch.count", params: FetchRequest.self, summary: "How many objects a fetch would return (limit/offset ignored).") { [self] params, _ in
            try engine().coordinator.withStores { stores in
                var unpaged = params
                unpaged.limit = nil
                unpaged.offset = nil
                return CountResult(count: try FetchExecutor(stores: stores, request: unpaged).count())
            }
        }

        registry.register("history.fetch", params: HistoryFetchParams.self, summary: "History transactions after a token.") { [self] params, _ in
            try engine().coordinator.withStores { stores in
                let limit = params.limit ?? 1000
                guard (1...10_000).contains(limit) else {
                    throw ServiceError(.invalidField, "limit must be from 1 to 10000.", details: ["field": "params.limit"])
                }
                let indices = try params.store.map { [try stores.index(named: $0)] } ?? Array(stores.list.indices)
                var result = HistoryResult(transactions: [], lastTokens: [:])
                for index in indices {
                    let store = stores.list[index]
                    result.transactions += try PersistentHistory.fetch(store, afterToken: params.afterToken, limit: limit)
                    result.lastTokens[store.name] = Int(store.lastToken)
                }
                return result
            }
        }
        registry.register("history.purge", params: HistoryPurgeParams.self, summary: "Deletes a store's history before a token.") { [self] params, _ in
            try engine().coordinator.withStores { stores in
                let store = stores.list[try stores.index(named: params.store)]
                return HistoryPurgeResult(store: store.name, purgedTransactions: try PersistentHistory.purge(store, beforeToken: params.beforeToken))
            }
        }

    }

    /// A `rows` fetch's rows written as JSON text while the fetch steps them, with no Swift
    /// values made of them (seven allocations a row); nil when a value JSON cannot hold (a
    /// non-finite double) leaves the materialised way to report it.
    private static func writtenRows(_ request: FetchRequest, entity: EntityDescription, stores: StoreSet) throws -> [UInt8]? {
        let writer = FetchRowWriter(entity: entity, stores: stores)
        var rows = FetchRowWriter.Output(capacity: min((request.limit ?? 0) == 0 ? 1024 : request.limit!, 16_384))
        var written = true
        try FetchExecutor(stores: stores, request: request).forEachRow { store, row in
            guard written else { return }
            written = rows.row { text in writer.write(row: row, store: store, to: &text) }
        }
        return written ? rows.finish() : nil
    }

    /// The orphan repair (objects whose required-by-the-app relationship is empty), on the stores or inside a context.
    private func registerStoreStateOperations(in registry: inout OperationRegistry) {
        registry.register("repair.orphans", params: RepairParams.self, summary: "Seed 000's repair: attach orphans to the default session.") { [self] params, request in
            let engine = try engine()
            guard let rule = engine.model.orphanRepair else {
                throw ServiceError(.invalidField, "Model '\(engine.model.name)' defines no orphanRepair rule.", details: ["model": .string(engine.model.name)])
            }
            if let contextID = params.context {
                return try engine.withContext(request.connection, contextID) { context, stores in
                    try OrphanRepair(rule: rule, stores: stores).runInContext(context)
                }
            }
            return try engine.coordinator.withStores { stores in
                try OrphanRepair(rule: rule, stores: stores).runInStores(author: "app", engine: engine, announcingExcept: request.connection)
            }
        }

    }

    /// Share metadata in the shared store and permission checks.
    private func registerShareStateOperations(in registry: inout OperationRegistry) {
        registry.register("share.setMetadata", params: ShareMetadataParams.self, summary: "Records a share zone's permission in the shared store (mirror fills this).") { [self] params, _ in
            try refuseWhileMirroring(true, what: "share.setMetadata",
                                     why: "a mirroring device takes its share metadata and permissions from the cloud's share records",
                                     field: "op")
            let engine = try engine()
            return try engine.coordinator.withStores { stores in
                guard let index = stores.list.firstIndex(where: { $0.scope == .shared }) else { throw ServiceError(.unknownStore, "No shared store is loaded.") }
                let store = stores.list[index]
                guard !params.zoneName.isEmpty else { throw ServiceError(.invalidField, "zoneName must not be empty.", details: ["field": "params.zoneName"]) }
                var zoned = 0
                try engine.write(store, author: "app", contextName: "share.setMetadata") { _ in
                    let zone = ZoneID(zoneName: params.zoneName, ownerName: params.ownerName ?? ZoneID.defaultOwner)
                    try SharePermissions.setMetadata(zone: zone.zoneName, owner: zone.ownerName, permission: params.permission, in: store)
                    for uri in params.objectIDs ?? [] {
                        guard let id = ObjectID(uri: uri), id.storeUUID == store.uuid, let key = id.primaryKey, store.holds(id.entity) else {
                            throw StoreError.unknownObject(uri, "share.setMetadata.objectIDs must be saved objects of the \(store.name) store.")
                        }
                        try store.database.execute("UPDATE \(PersistentStore.table(id.entity)) SET z_zone = ? WHERE z_pk = ?", [zone.key, key])
                        guard store.database.changes == 1 else { throw StoreError.unknownObject(uri, "it is not in the \(store.name) store.") }
                        zoned += 1
                    }
                }
                return ShareMetadataResult(zoneName: params.zoneName, permission: params.permission, zonedObjects: zoned)
            }
        }
        registry.register("share.list", params: Empty.self, summary: "The share metadata the shared store keeps.") { [self] _, _ in
            try engine().coordinator.withStores { stores in
                ShareListResult(shares: try stores.list.filter { $0.scope == .shared }.flatMap { try SharePermissions.shares(in: $0) })
            }
        }
        registry.register("permission.check", params: PermissionParams.self, summary: "canModifyManagedObjects / canUpdateRecord / canDeleteRecord.") { [self] params, request in
            let engine = try engine()
            let check = { (stores: StoreSet, context: ManagedObjectContext?) throws -> PermissionResult in
                var result = PermissionResult(canModifyManagedObjects: [:], objects: [])
                for store in stores.list { result.canModifyManagedObjects[store.name] = try SharePermissions.canModify(store) }
                for uri in params.objectIDs ?? [] {
                    let object = context?.lookup(uri)
                    guard let id = object?.id ?? ObjectID(uri: uri) else {
                        throw ServiceError(.invalidField, "'\(uri)' is not an object ID.", details: ["objectID": .string(uri)])
                    }
                    let allowed = try SharePermissions.canChange(object, id: id, stores: stores)
                    result.objects.append(.init(objectID: uri, canUpdateRecord: allowed, canDeleteRecord: allowed))
                }
                return result
            }
            if let contextID = params.context {
                return try engine.withContext(request.connection, contextID) { context, stores in try check(stores, context) }
            }
            return try engine.coordinator.withStores { stores in try check(stores, nil) }
        }

    }

    /// The device as it stands: its stores, model and clock.
    private func registerDeviceOperations(in registry: inout OperationRegistry) {
        registry.register("store.list", params: Empty.self, summary: "The loaded stores in load order.") { [self] _, _ in
            let engine = try engine()
            return StoreListResult(stores: engine.coordinator.storeDescriptions, routing: engine.router.mode)
        }
        registry.register("model.get", params: Empty.self, summary: "The data model in use.") { [self] _, _ in
            try engine().model
        }
        registry.register("clock.set", params: DeviceClockParams.self, summary: "Reads, sets or advances the device's clock.") { [self] params, _ in
            let clock = try engine().coordinator.clock
            try params.apply(to: clock)
            return DeviceClockState(now: clock.seconds(), offsetSeconds: clock.offsetSeconds)
        }
    }

    static func entityNotInStore(_ entity: String, _ store: PersistentStore) -> ServiceError {
        ServiceError(.entityNotInStore, StoreError.entityNotInStoreMessage, details: [
            "entity": .string(entity), "store": .string(store.name), "storeURL": .string(store.url),
            "storeEntities": .array(store.configuration.entities.map { .string($0) }), "exception": "NSInvalidArgumentException"])
    }

    static func obtainPermanentIDs(_ uris: [String], context: ManagedObjectContext, stores: StoreSet, router: StoreRouter) throws -> ObtainResult {
        var result = ObtainResult(objects: [])
        let objects = try uris.map { try context.object($0, stores: stores) }
        for object in objects where object.id.isTemporary {
            let decision: StoreRouter.Decision
            if let store = object.store {
                decision = object.routing ?? .init(store: store, reason: .assigned, detail: "assigned")
            } else {
                var links: [(relationship: String, target: StoreRouter.LinkTarget)] = []
                for relationship in object.entity.toOneRelationships {
                    guard let uri = object.value(relationship.name).string else { continue }
                    if let related = context.lookup(uri), let store = related.store { links.append((relationship.name, .store(store))) }
                    else if let id = ObjectID(uri: uri), let uuid = id.storeUUID, let store = stores.index(uuid: uuid) { links.append((relationship.name, .store(store))) }
                }
                decision = try router.route([.init(entity: object.entity.name, assigned: nil, links: links)])[0]
            }
            let store = stores.list[decision.store]
            let key = try store.database.transaction { try store.allocatePrimaryKeys(object.entity.name, count: 1) }
            let old = object.uri
            context.renameRewritingReferences(object, to: store.objectID(object.entity.name, key))
            object.store = decision.store
            object.routing = decision
            result.objects.append(.init(temporaryID: old, objectID: object.uri, store: store.name, reason: decision.reason))
        }
        return result
    }
}
