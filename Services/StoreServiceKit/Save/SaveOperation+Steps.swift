import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// The save's steps, in the order `SaveOperation.write` runs them.
extension SaveOperation {
    func validate(inserted: [ContextObject], updated: [ContextObject]) throws {
        var problems: [ServiceError] = []
        for object in inserted + updated {
            let entity = object.entity
            for position in entity.requiredPositions {
                guard object.isInserted || object.change(at: position) != nil, object.value(at: position) == .null else { continue }
                let name = entity.storedPropertyNames[position]
                let what = position < entity.attributes.count ? "a required value" : "a required relationship"
                problems.append(StoreError.coreData(.validationMissingMandatoryProperty, 1570,
                                                    "\(entity.name).\(name) is \(what); set it before saving.",
                                                    ["objectID": .string(object.uri), "entity": .string(entity.name), "property": .string(name)]))
            }
        }
        if problems.count == 1 { throw problems[0] }
        if problems.count > 1 {
            throw StoreError.coreData(.validationMultipleErrors, 1560, "\(problems.count) validation errors; nothing was saved. Fix each one listed in details.errors.",
                                      ["errors": .array(problems.map { problem in
                                          var entry = problem.wire.details
                                          entry["code"] = .string(problem.wire.code.rawValue)
                                          entry["message"] = .string(problem.wire.message)
                                          return .object(entry)
                                      })])
        }
    }

    /// Where each new object goes, found by object identity (cheaper to hash than URIs).
    func route(inserted: [ContextObject], updated: [ContextObject], outside: [String: Int]) throws -> SaveRoutes {
        // New objects by identity (every one is registered in the context): cheaper to hash than URIs.
        var position: [ObjectIdentifier: Int] = [:]
        position.reserveCapacity(inserted.count)
        for (index, object) in inserted.enumerated() { position[ObjectIdentifier(object)] = index }
        var inputs = inserted.map { StoreRouter.Input(entity: $0.entity.name, assigned: $0.store, links: []) }
        // The last target looked up, kept: a batch of new events usually names one session.
        var last: (uri: String, target: StoreRouter.LinkTarget?)?
        func target(_ uri: String) -> StoreRouter.LinkTarget? {
            if let last, last.uri == uri { return last.target }
            var found: StoreRouter.LinkTarget?
            if let object = context.lookup(uri) {
                if let index = position[ObjectIdentifier(object)] { found = .newObject(index) }
                else { found = object.store.map { .store($0) } }
            } else {
                found = outside[uri].map { .store($0) }
            }
            last = (uri, found)
            return found
        }
        for (index, object) in inserted.enumerated() {
            let relationships = object.entity.toOneRelationships
            for number in relationships.indices {
                guard let uri = object.value(at: object.entity.position(ofToOne: number)).string, let link = target(uri) else { continue }
                inputs[index].links.append((relationships[number].name, link))
                // The inverse direction: a new destination follows the source's store.
                if case let .newObject(other) = link { inputs[other].links.append((relationships[number].inverse ?? relationships[number].name, .newObject(index))) }
            }
        }
        for object in updated {
            guard let store = object.store else { continue }
            for relationship in object.entity.toOneRelationships {
                guard let uri = object.change(relationship.name)?.string, let target = context.lookup(uri),
                      let index = position[ObjectIdentifier(target)] else { continue }
                inputs[index].links.append((relationship.inverse ?? relationship.name, .store(store)))
            }
        }
        var decisions = try router.route(inputs)
        // How many went where and why: a batch has one or two kinds, so a list beats a table.
        var counts: [(store: Int, reason: RoutingReason, count: Int)] = []
        for (index, object) in inserted.enumerated() {
            if let routing = object.routing { decisions[index] = routing }
            let (store, reason) = (decisions[index].store, decisions[index].reason)
            if let kind = counts.firstIndex(where: { $0.store == store && $0.reason == reason }) { counts[kind].count += 1 }
            else { counts.append((store, reason, 1)) }
            guard Logger.minimumLevel <= .debug else { continue }
            let decision = decisions[index]
            logger.debug("store routing", ["objectID": .string(object.uri), "entity": .string(object.entity.name),
                                          "store": .string(stores.list[decision.store].name), "reason": .string(decision.reason.rawValue),
                                          "detail": .string(decision.detail), "mode": .string(router.mode.rawValue)])
        }
        var summary: [String: JSONValue] = [:]
        for (store, reason, count) in counts { summary["\(stores.list[store].name).\(reason.rawValue)"] = .int(count) }
        if !summary.isEmpty {
            logger.info("store routing", ["mode": .string(router.mode.rawValue), "context": .string(context.id),
                                          "decisions": .object(summary)])
        }
        return SaveRoutes(positions: position, decisions: decisions)
    }

    /// Stores of relationship destinations outside the context, each URI parsed once (a batch
    /// of events usually points at one session).
    func outsideStores(of objects: [ContextObject]) -> [String: Int] {
        var outside: [String: Int] = [:]
        var last: String?
        for object in objects {
            for number in object.entity.toOneRelationships.indices {
                guard let uri = object.value(at: object.entity.position(ofToOne: number)).string, uri != last else { continue }
                last = uri
                guard outside[uri] == nil, context.lookup(uri) == nil,
                      let id = ObjectID(uri: uri), let uuid = id.storeUUID, let index = stores.index(uuid: uuid) else { continue }
                outside[uri] = index
            }
        }
        return outside
    }

    /// Cross-store relationships are refused before anything is written (133010).
    func refuseCrossStoreRelationships(of objects: [ContextObject], storeIndex storeOf: (ContextObject) -> Int, outside: [String: Int]) throws {
        var last: (uri: String, store: Int)?
        func storeIndex(ofTarget uri: String) throws -> Int {
            if let last, last.uri == uri { return last.store }
            let index: Int
            if let target = context.lookup(uri) { index = storeOf(target) }
            else if let outside = outside[uri] { index = outside }
            else { throw StoreError.unknownObject(uri, "it is not in a loaded store.") }
            last = (uri, index)
            return index
        }
        for object in objects {
            let own = storeOf(object)
            // By number: binding each description copied it (a retain and release per string in it).
            for number in object.entity.toOneRelationships.indices {
                let position = object.entity.position(ofToOne: number)
                guard object.isInserted || object.change(at: position) != nil,
                      let target = object.value(at: position).string else { continue }
                let other = try storeIndex(ofTarget: target)
                if other != own {
                    throw StoreError.coreData(.crossStoreRelationship, 133010, StoreError.crossStoreMessage, [
                        "objectID": .string(object.uri), "relationship": .string("\(object.entity.name).\(object.entity.toOneRelationships[number].name)"),
                        "destinationID": .string(target), "store": .string(stores.list[own].name),
                        "destinationStore": .string(stores.list[other].name),
                        "hint": .string("Both ends of a relationship must be in one store: assign the new object to \(stores.list[other].name), or move it with object.moveToStore."),
                    ])
                }
            }
        }
    }

    /// Zones of shared-store objects (new ones inherit their related object's zone), after
    /// checking the user may change them: the share's permission must be readWrite.
    func checkPermissions(inserted: [ContextObject], updated: [ContextObject], deleted: [ContextObject],
                                  storeIndex: (ContextObject) -> Int) throws -> [String: String] {
        var zones: [String: String] = [:]
        // Zones are read from the store: share metadata may have changed since the context read the row.
        func zone(ofTarget uri: String) throws -> String? {
            if let object = context.lookup(uri), object.isInserted { return object.zone }
            guard let id = ObjectID(uri: uri), let uuid = id.storeUUID, let index = stores.index(uuid: uuid),
                  let entity = model.entity(named: id.entity), let key = id.primaryKey else { return nil }
            return try stores.list[index].read(entity, primaryKey: key)?.zone
        }
        for object in updated + deleted where stores.list[storeIndex(object)].scope == .shared {
            if let zone = try zone(ofTarget: object.uri) { zones[object.uri] = zone }
        }
        try inferZones(of: inserted.filter { stores.list[storeIndex($0)].scope == .shared }, updated: updated, into: &zones, zone: zone(ofTarget:))
        for (objects, action) in [(inserted, "insert"), (updated, "update"), (deleted, "delete")] {
            for object in objects {
                let store = stores.list[storeIndex(object)]
                guard store.scope == .shared, let zone = zones[object.uri] else { continue }
                let permission = try SharePermissions.permission(zone: zone, in: store)
                // Imports from the cloud (author "sync") apply the server's verdict: never refused here.
                guard permission == .readWrite || context.author == Self.syncAuthor else {
                    throw ServiceError(.permissionFailure,
                                       "This user's permission on shared zone '\(zone)' is \(permission.rawValue); the \(action) of \(object.uri) was refused and nothing was saved. Ask the share's owner for read-write access.",
                                       details: ["objectID": .string(object.uri), "zone": .string(zone), "permission": .string(permission.rawValue),
                                                 "action": .string(action), "store": .string(store.name)])
                }
            }
        }
        return zones
    }

    /// A new shared-store object takes the zone of an object it is related to, through any
    /// relationship: a to-one it holds, or another object's to-one that names it (the other side
    /// of a to-many, and a many-to-many's link row, which names both sides), to a fixed point:
    /// a new tag on a shared photo takes the photo's zone through their link.
    private func inferZones(of inserted: [ContextObject], updated: [ContextObject], into zones: inout [String: String],
                            zone: (String) throws -> String?) throws {
        let waiting = Set(inserted.map(\.uri))
        // A stored target is read once, however many new objects name it (a batch of events of one session).
        var stored: [String: String?] = [:]
        func storedZone(_ uri: String) throws -> String? {
            if let known = stored[uri] { return known }
            let found = try zone(uri)
            stored[uri] = found
            return found
        }
        for object in inserted { if let own = object.zone { zones[object.uri] = own } }
        var progress = true
        while progress {
            progress = false
            for object in inserted where zones[object.uri] == nil {
                for relationship in object.entity.toOneRelationships {
                    guard let uri = object.value(relationship.name).string, let found = try zones[uri] ?? storedZone(uri) else { continue }
                    zones[object.uri] = found
                    progress = true
                    break
                }
            }
            for object in inserted + updated {
                guard let own = zones[object.uri] else { continue }
                for relationship in object.entity.toOneRelationships {
                    guard let uri = object.value(relationship.name).string, waiting.contains(uri), zones[uri] == nil else { continue }
                    zones[uri] = own
                    progress = true
                }
            }
        }
    }

    func conflict(_ object: ContextObject, stored: [String: SQLValue]?, storedVersion: Int64?) -> JSONValue {
        [
            "objectID": .string(object.uri), "entity": .string(object.entity.name),
            "snapshot": .object(wireValues(object.snapshot, entity: object.entity)),
            "changes": .object(wireValues(object.changes, entity: object.entity)),
            "storedSnapshot": stored.map { .object(wireValues($0, entity: object.entity)) } ?? .null,
            "oldVersion": .int(Int(object.version)), "newVersion": storedVersion.map { .int(Int($0)) } ?? .null,
        ]
    }

    private func wireValues(_ values: [String: SQLValue], entity: EntityDescription) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for (key, value) in values {
            if let attribute = entity.attribute(key) { out[key] = AttributeCoding.jsonValue(value, type: attribute.type) }
            else { out[key] = value.string.map { .string($0) } ?? .null }
        }
        return out
    }

    /// Deletes a row and applies its relationships' delete rules; returns the deleted IDs.
    func deleteCascading(_ entity: EntityDescription, primaryKey: Int64, storeIndex: Int, changes: inout StoreChangeRecorder,
                         deletedKeys: inout Set<String>) throws -> [String] {
        let store = stores.list[storeIndex]
        let id = store.objectID(entity.name, primaryKey)
        guard deletedKeys.insert(id.uri).inserted, let row = try store.read(entity, primaryKey: primaryKey) else { return [] }
        var gone: [String] = []
        for relationship in entity.relationships {
            let destination = model.entity(named: relationship.destination)!
            guard store.holds(destination.name) else { continue }
            if let end = model.manyToMany(entity.name, relationship.name) {
                gone += try deleteLinks(end, relationship, of: entity, primaryKey: primaryKey, id: id, storeIndex: storeIndex,
                                        changes: &changes, deletedKeys: &deletedKeys)
                continue
            }
            var related: [Int64] = []
            if relationship.toMany, let inverse = relationship.inverse {
                related = try store.referencing(destination.name, relationship: inverse, primaryKey: primaryKey)
            } else if !relationship.toMany, let index = entity.storedPropertyNames.firstIndex(of: relationship.name), let key = row.values[index].int64 {
                related = [key]
            }
            guard !related.isEmpty else { continue }
            switch relationship.deleteRule {
            case .deny:
                throw StoreError.coreData(.validationRelationshipDeniedDelete, 1600,
                                          "\(entity.name).\(relationship.name) has the deny delete rule and still has \(related.count) object(s); remove them before deleting \(id.uri).",
                                          ["objectID": .string(id.uri), "relationship": .string(relationship.name)])
            case .cascade:
                for key in related {
                    gone += try deleteCascading(destination, primaryKey: key, storeIndex: storeIndex, changes: &changes,
                                                deletedKeys: &deletedKeys)
                }
            case .nullify:
                guard let inverse = relationship.inverse else { continue }
                if !relationship.toMany {
                    // One-to-one: the partner's side, if it still points here, is cleared.
                    guard destination.relationship(inverse)?.toMany == false, let position = destination.position(of: inverse),
                          let partner = try store.read(destination, primaryKey: related[0]), partner.values[position].int64 == primaryKey,
                          !deletedKeys.contains(store.objectID(destination.name, related[0]).uri) else { continue }
                    try store.update(destination, primaryKey: related[0], changes: [(inverse, .null)], version: partner.version + 1)
                    try changes.updated(entity: destination.name, primaryKey: related[0], uuid: partner.uuid, changed: [inverse])
                    continue
                }
                for key in related where !deletedKeys.contains(store.objectID(destination.name, key).uri) {
                    guard let child = try store.read(destination, primaryKey: key) else { continue }
                    try store.update(destination, primaryKey: key, changes: [(inverse, .null)], version: child.version + 1)
                    try changes.updated(entity: destination.name, primaryKey: key, uuid: child.uuid, changed: [inverse])
                }
            }
        }
        var tombstone: [String: JSONValue] = ["uuid": .string(row.uuid)]
        let (zone, zoneOwner) = ManagedObject.zoneParts(row.zone)
        if let zone { tombstone["zone"] = .string(zone) }
        if let zoneOwner { tombstone["zoneOwner"] = .string(zoneOwner) }
        for (index, attribute) in entity.attributes.enumerated() where attribute.preservesValueInHistoryOnDeletion {
            tombstone[attribute.name] = AttributeCoding.jsonValue(row.values[index], type: attribute.type)
        }
        try store.delete(entity.name, primaryKey: primaryKey)
        try changes.deleted(entity: entity.name, primaryKey: primaryKey, uuid: row.uuid, tombstone: tombstone)
        return [id.uri] + gone
    }

    /// A many-to-many relationship's delete rule: its links go whatever the rule (nullify is
    /// just that), cascade deletes the other ends too, deny refuses while a link remains.
    private func deleteLinks(_ end: ManyToManyEnd, _ relationship: RelationshipDescription, of entity: EntityDescription, primaryKey: Int64,
                             id: ObjectID, storeIndex: Int, changes: inout StoreChangeRecorder, deletedKeys: inout Set<String>) throws -> [String] {
        let store = stores.list[storeIndex]
        guard store.holds(end.link), let linkEntity = model.entity(named: end.link), let destination = model.entity(named: relationship.destination) else { return [] }
        let links = try store.links(end, primaryKey: primaryKey).filter { !deletedKeys.contains(store.objectID(end.link, $0.link).uri) }
        guard !links.isEmpty else { return [] }
        if relationship.deleteRule == .deny {
            throw StoreError.coreData(.validationRelationshipDeniedDelete, 1600,
                                      "\(entity.name).\(relationship.name) has the deny delete rule and still has \(links.count) object(s); remove them before deleting \(id.uri).",
                                      ["objectID": .string(id.uri), "relationship": .string(relationship.name)])
        }
        var gone: [String] = []
        for link in links {
            gone += try deleteCascading(linkEntity, primaryKey: link.link, storeIndex: storeIndex, changes: &changes, deletedKeys: &deletedKeys)
        }
        if relationship.deleteRule == .cascade {
            for other in Set(links.map(\.other)).sorted() {
                gone += try deleteCascading(destination, primaryKey: other, storeIndex: storeIndex, changes: &changes, deletedKeys: &deletedKeys)
            }
        }
        return gone
    }
}
