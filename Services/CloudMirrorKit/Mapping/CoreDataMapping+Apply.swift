import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import StoreServiceKit
import StoreWire

extension CoreDataMapping {
    // MARK: Applying cloud state locally

    /// The context the mirror's imports are saved in, as history and events name it.
    static let importContextID = "mirror"
    static let importContextName = "cloudMirror"

    /// A row to write (fields) or delete (fields nil) as the cloud says.
    struct LocalChange {
        var uuid: String
        var entity: EntityDescription
        var fields: [String: JSONValue]?
        /// The cloud zone, for new shared-store rows.
        var zone: String?
        /// The zone the record's relationships resolve within (`linkZone(of:store:)`); nil: any
        /// object of the store.
        var linkZone: ZoneID? = nil
    }

    /// Writes `changes` into one store in one save by author `sync` (history, remote-change
    /// events; no permission check, no echo). Relationships name records; a record not present
    /// yet is returned so the caller can apply it again later.
    @discardableResult
    func applyLocally(_ changes: [LocalChange], storeIndex: Int, stores: StoreSet) throws -> [LocalChange] {
        guard !changes.isEmpty else { return [] }
        let store = stores.list[storeIndex]
        let state = StoreBookkeeping(store)
        let context = ManagedObjectContext(id: Self.importContextID, name: Self.importContextName, author: SaveOperation.syncAuthor,
                                           mergePolicy: .mergeByPropertyObjectTrump)
        var byUUID: [String: ContextObject] = [:]
        var links: [(ContextObject, String, String?, LocalChange)] = []
        let ordered = changes.sorted { $0.entity.toOneRelationships.count < $1.entity.toOneRelationships.count }
        var existing: [String: [String: Int64]] = [:]
        for (entity, group) in Dictionary(grouping: ordered, by: \.entity.name) {
            existing[entity] = try state.primaryKeys(entity: entity, uuids: group.map(\.uuid))
        }
        for change in ordered where store.holds(change.entity.name) {
            let key = existing[change.entity.name]?[change.uuid]
            guard let fields = change.fields else {
                if let key {
                    let object = try context.object(store.objectID(change.entity.name, key).uri, stores: stores)
                    object.isDeleted = true
                }
                continue
            }
            let object: ContextObject
            if let key {
                object = try context.object(store.objectID(change.entity.name, key).uri, stores: stores)
                guard !object.isDeleted else { continue }
            } else {
                object = context.insert(entity: change.entity, uuid: change.uuid, zone: store.scope == .shared ? change.zone : nil)
                object.store = storeIndex
                object.routing = .init(store: storeIndex, reason: .assigned, detail: "imported from the cloud")
            }
            try context.set(MirrorRecordCoding.attributeValues(entity: change.entity, fields: fields), on: object, model: stores.model)
            byUUID[change.uuid] = object
            for (name, target) in MirrorRecordCoding.relationshipNames(entity: change.entity, fields: fields) {
                links.append((object, name, target, change))
            }
        }
        var unresolved: [LocalChange] = []
        // Destinations looked up once: a page of events names one session again and again.
        var keys: [String: Int64?] = [:]
        for (object, name, target, change) in links {
            var value: JSONValue = .null
            if let target, let destination = object.entity.relationship(name)?.destination {
                let cacheKey = destination + "/" + target + "/" + (change.linkZone?.key ?? "")
                if keys[cacheKey] == nil { keys[cacheKey] = .some(try state.primaryKey(entity: destination, uuid: target, linkedFrom: change.linkZone)) }
                if let related = byUUID[target], !related.isDeleted {
                    value = .string(related.uri)
                } else if let key = try keys[cacheKey] ?? nil
                            ?? state.keptLink(source: change.uuid, entity: change.entity, relationship: name, target: target) {
                    value = .string(store.objectID(destination, key).uri)
                } else {
                    unresolved.append(change)
                }
            }
            try context.set([name: value], on: object, model: stores.model)
        }
        let (result, notices) = try SaveOperation(context: context, stores: stores, router: engine.router, logger: engine.logger).run()
        engine.publish(notices, from: nil)
        try queueSideEffects(of: result, applied: Set(changes.map(\.uuid)), state: state)
        return unresolved
    }

    /// `applyLocally` (with its second pass for relationships to objects it created), except
    /// that a record the store refuses for what it holds (a value of the wrong type, a
    /// required value missing, a string outside its allowed values: another client wrote it)
    /// is left out rather than failing the rest: otherwise one refused record would fail every
    /// fetch of its zone, and every send that fetches first, and the device would stop syncing. The
    /// changes go in one save; only when it is refused are they saved one by one to find the
    /// records at fault. Returns the refused records' errors by uuid; the caller keeps their
    /// bookkeeping as it was (`markUnimportable`), so a later version of the record is tried.
    func applyRefusing(_ changes: [LocalChange], storeIndex: Int, stores: StoreSet) throws -> [String: WireError] {
        let state = StoreBookkeeping(stores.list[storeIndex])
        try notePendingLinks(changes, state: state)
        do {
            let unresolved = try applyLocally(changes, storeIndex: storeIndex, stores: stores)
            if !unresolved.isEmpty { try applyLocally(unresolved, storeIndex: storeIndex, stores: stores) }
            return [:]
        } catch where Self.refusal(error) != nil {
            var refused: [String: WireError] = [:]
            var unresolved: [LocalChange] = []
            func one(_ change: LocalChange) throws -> [LocalChange] {
                do {
                    return try applyLocally([change], storeIndex: storeIndex, stores: stores)
                } catch {
                    guard let refusal = Self.refusal(error) else { throw error }
                    refused[change.uuid] = refusal
                    return []
                }
            }
            for change in changes.sorted(by: { $0.entity.toOneRelationships.count < $1.entity.toOneRelationships.count }) {
                unresolved += try one(change)
            }
            for change in unresolved where refused[change.uuid] == nil { _ = try one(change) }
            // Objects that name a refused record wait for it like any other destination.
            try notePendingLinks(changes.filter { refused[$0.uuid] == nil }, state: state, absent: Set(refused.keys))
            return refused
        }
    }

    /// Keeps, for `changes` about to be applied, each relationship whose destination is neither
    /// stored nor among the changes (or is `absent`: refused), which stays empty until that
    /// record arrives (`PendingLinks`), and forgets what the changes' records waited for before.
    /// Committed before the changes are saved: a crash between leaves a link that sets what is
    /// set already, never an empty relationship that nothing waits for.
    func notePendingLinks(_ changes: [LocalChange], state: StoreBookkeeping, absent: Set<String> = []) throws {
        let links = PendingLinks(database: state.store.database)
        let batch = Set(changes.map(\.uuid)).subtracting(absent)
        let now = clock.seconds()
        var waiting: [PendingLinks.Link] = []
        for change in changes {
            guard let fields = change.fields else { continue }
            for (name, target) in MirrorRecordCoding.relationshipNames(entity: change.entity, fields: fields) {
                guard let target, !batch.contains(target), let destination = change.entity.relationship(name)?.destination,
                      try state.primaryKey(entity: destination, uuid: target, linkedFrom: change.linkZone) == nil,
                      try state.keptLink(source: change.uuid, entity: change.entity, relationship: name, target: target) == nil else { continue }
                let zone = try change.zone ?? state.meta(change.uuid)?.zone.key
                waiting.append(.init(recordName: change.uuid, entity: change.entity.name, relationship: name, target: target, zone: zone, since: now))
            }
        }
        guard try !waiting.isEmpty || !links.isEmpty else { return }
        if state.store.database.isInTransaction {
            try links.replace(sources: changes.map(\.uuid), with: waiting)
        } else {
            try write(state.store, commit: .deferred) { _ in try links.replace(sources: changes.map(\.uuid), with: waiting) }
        }
        if !waiting.isEmpty {
            logger.info("relationships wait for records not fetched yet", ["links": .int(waiting.count), "store": .string(state.store.name)])
        }
    }

    /// The zone a fetched record's relationships resolve within (nil: any object of the store).
    /// A participant writes into a share zone, so a record there that another user last
    /// modified names objects of that zone only: were its names resolved across the owner's
    /// zones, it could link the owner's private objects into the share (and the next share of
    /// the graph would take them). The owner's own records resolve across the owner's zones:
    /// Core Data's zone, which only its owner writes, and what the owner's devices wrote into a
    /// share zone (a move saves a record in its old zone, naming its new relationship, before
    /// moving it); that reading holds because an owner's save sends empty what this rule refused
    /// (`MirrorBookkeeping.zoneRefusedLinks`). In the shared store a record resolves within its zone.
    func linkZone(of record: CloudRecord, store: PersistentStore, user: String?) -> ZoneID? {
        if store.scope == .shared { return record.zoneID }
        guard record.zoneID.zoneName != ZoneID.coreDataZoneName, let modifier = record.lastModifiedUserRecordName,
              modifier != user else { return nil }
        return record.zoneID
    }

    /// The error, when it is about a record's content and not about the device: the store would
    /// refuse that record however often it were tried.
    static func refusal(_ error: any Error) -> WireError? {
        guard let wire = ServiceError.wire(of: error), [.validationInvalidValue, .validationMultipleErrors, .validationMissingMandatoryProperty, .validationStringPatternMatching,
                         .validationRelationshipDeniedDelete, .crossStoreRelationship, .uniquenessConstraint].contains(wire.code) else { return nil }
        return wire
    }

    /// Keeps the refusals `applyRefusing` returned (listed by `sync.status`) and logs them, in
    /// the caller's transaction; returns what to tell the device's clients once it commits
    /// (`publishRefused`). A version of a record already refused is not told again.
    func keepRefused(_ refused: [String: WireError], of changes: [LocalChange], zone: ZoneID, tags: [String: String?],
                     state: StoreBookkeeping) throws -> [ImportRefusedNotice] {
        var notices: [ImportRefusedNotice] = []
        for change in changes {
            guard let error = refused[change.uuid] else { continue }
            guard try state.markUnimportable(change.uuid, entity: change.entity.name, zone: zone, tag: tags[change.uuid] ?? nil, error: error) else { continue }
            logger.notice("a cloud record was not imported: the store refuses it", ["recordName": .string(change.uuid), "zone": .string(zone.key),
                                                                              "code": .string(error.code.rawValue), "message": .string(error.message)])
            notices.append(ImportRefusedNotice(store: state.store.name, recordName: change.uuid, entity: change.entity.name,
                                               zone: zone.key, code: error.code.rawValue, reason: error.message))
        }
        return notices
    }

    /// Tells the device's clients of records their store refused (`importRefused`).
    func publishRefused(_ notices: [ImportRefusedNotice]) {
        for notice in notices { engine.announce(topic: StoreEngine.remoteChangeTopic, event: Self.importRefusedEvent, data: notice) }
    }

    /// Delete rules run on the cloud's changes too (a session deleted in the cloud cascades to
    /// the events this device still relates to it). Those extra changes are this device's own
    /// decisions: they are queued for the cloud like a local save, so every copy converges
    /// (scenario 23). The changes the cloud sent are not (no echo).
    private func queueSideEffects(of result: SaveResult, applied: Set<String>, state: StoreBookkeeping) throws {
        guard let token = result.transactions.first(where: { $0.storeUUID == state.store.uuid })?.token else { return }
        let changes = try PersistentHistory.changes(state.store, token: token).filter { !applied.contains($0.uuid) }
        guard !changes.isEmpty else { return }
        // Not derivable again (the import's history is never queued by `ingest`): waits for the disk.
        try write(state.store) { _ in try queue(changes, state: state) }
    }

    private func queue(_ changes: [HistoryChanges.Entry], state: StoreBookkeeping) throws {
        for change in changes {
            let meta = try state.meta(change.uuid)
            if change.kind == .delete {
                // A record the server may have by now: known there, or queued (a batch in
                // flight may be saving it). A delete queued for one it never got is dropped
                // when its batch is built.
                let queued = try state.pending(uuid: change.uuid) != nil
                guard meta != nil || queued else { continue }
                try state.enqueue(uuid: change.uuid, entity: change.entity, kind: .delete, zone: meta?.zone, changed: [])
            } else {
                try state.enqueue(uuid: change.uuid, entity: change.entity, kind: meta == nil ? .insert : .update, zone: nil,
                                  changed: Set((change.changed ?? []).map(MirrorRecordCoding.fieldName)))
            }
        }
    }

    /// Tells the device's clients that the server refused a local change and it was undone.
    func publishReverted(_ data: RevertedNotice) {
        engine.announce(topic: StoreEngine.remoteChangeTopic, event: Self.revertedEvent, data: data)
    }

    /// The row of `uuid` in `store` as record fields, or nil when it is gone.
    static func currentFields(entity: EntityDescription, uuid: String, state: StoreBookkeeping) throws -> [String: JSONValue]? {
        guard let key = try state.primaryKey(entity: entity.name, uuid: uuid),
              let row = try state.store.read(entity, primaryKey: key) else { return nil }
        return try MirrorRecordCoding.fields(entity: entity, row: row, state: state, timesText: try state.fieldTimesText(uuid))
    }

    /// Removes every object of every store (as deletes the mirror never exports), the share
    /// permissions and links waiting, and the mirror's bookkeeping but `keys`; the export cursor
    /// moves past it all. Returns how many objects went.
    func removeEverything(from mirrored: [any MirrorStore], keeping keys: [String]) throws -> Int {
        var removed = 0
        for turn in try mirrored.map(CoreDataStore.of) {
            let store = turn.store, index = turn.index, stores = turn.stores
            var wipe: [LocalChange] = []
            for entity in store.entities.values {
                for row in try store.database.query("SELECT z_uuid FROM \(PersistentStore.table(entity.name))") {
                    if let uuid = row[0].string { wipe.append(LocalChange(uuid: uuid, entity: entity, fields: nil, zone: nil)) }
                }
            }
            removed += wipe.count
            try applyLocally(wipe, storeIndex: index, stores: stores)
            try write(store) { _ in
                try store.database.execute("DELETE FROM z_share; DELETE FROM \(PendingLinks.table);")
                let state = turn.state
                try state.forgetEverything(keeping: keys + [MirrorBookkeeping.exportCursorKey])
                try state.setValue(MirrorBookkeeping.exportCursorKey, String(store.lastToken))
            }
        }
        return removed
    }
}

/// The `importRefused` event: a cloud record the store refused (it stays as it was here).
struct ImportRefusedNotice: Codable, Sendable {
    var store: String
    var recordName: String
    var entity: String
    var zone: String
    var code: String
    var reason: String
}

/// The `changeReverted` event: the server refused a local change and the device undid it.
struct RevertedNotice: Codable, Sendable {
    var store: String
    var uuid: String
    var entity: String
    /// `updateReverted` (the server's copy is back) or `insertDeleted` (the new object is gone).
    var action: String
    var code: String
    var reason: String
}
