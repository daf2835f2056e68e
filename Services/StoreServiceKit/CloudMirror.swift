import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import Synchronization

/// The device's cloud mirror (NSPersistentCloudKitContainer's job): the private store ↔ the
/// user's private database, the shared store ↔ the user's shared database, over one
/// connection to the sync-service. Every sync step runs under `work`, one at a time, on the
/// calling connection's thread or the automatic-mode thread (blocking calls, never on Swift's
/// cooperative pool); `status` is readable at any moment.
final class CloudMirror: Sendable {
    static let revertedEvent = "changeReverted"

    let options: MirrorOptions
    let engine: StoreEngine
    let logger = Logger(label: "store-service.mirror")
    private let connection = Mutex<Connection?>(nil)
    /// The credential the mirror signs in with; nil while the device is signed out.
    private let credential: Mutex<String?>
    private let work = Mutex(())
    let progress = Mutex(Progress())
    private let wake = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    /// Set by a `databaseChanged` push: the automatic loop fetches at once.
    private let poked = Atomic<Bool>(false)

    struct Connection: Sendable {
        var client: WireClient
        var user: String
    }

    /// What `sync.status` shows besides the stores' queues.
    struct Progress: Sendable {
        var inFlight: String?
        var lastError: WireError?
        var lastSuccess: Date?
        /// Items per records.modify; halved on limitExceeded.
        var batchLimit = 400
        var zonesEnsured: Set<String> = []
        var backoffSeconds = 0.0
    }

    init(options: MirrorOptions, engine: StoreEngine) throws {
        self.options = options
        self.engine = engine
        // A sign-out outlives restarts (iOS stays signed out until the user signs in again).
        let signedOut = try engine.coordinator.withStores { stores -> Bool in
            for store in stores.list { try store.database.transaction { try MirrorState(store).createTables() } }
            guard let index = Self.storeIndex(.private, in: stores) else { return false }
            return try MirrorState(stores.list[index]).value(Self.signedOutKey) != nil
        }
        credential = Mutex(signedOut ? nil : options.credential)
    }

    // MARK: Serialised work

    /// Runs one sync step exclusively, recording it as in flight and its error as the last one.
    func exclusive<T>(_ name: String, _ body: () throws -> T) throws -> T {
        try work.withLock { _ in
            progress.withLock { $0.inFlight = name }
            defer { progress.withLock { $0.inFlight = nil } }
            do {
                let result = try body()
                progress.withLock { $0.lastSuccess = Date(); $0.backoffSeconds = 0 }
                return result
            } catch let error as ServiceError {
                throw failed(error.wire)
            } catch let error as WireError {
                throw failed(error)
            }
        }
    }

    /// Records a failed step as the last error and gives it to the client: without the texts
    /// the mirror's parse kept (errors reach clients and sync.status).
    private func failed(_ error: WireError) -> ServiceError {
        let details = Self.withoutKeptTexts(.object(error.details)).objectValue ?? [:]
        progress.withLock { $0.lastError = WireError(error.code, error.message, details: details) }
        return ServiceError(error.code, error.message, details: details)
    }

    // MARK: The sync-service connection

    /// The connected client (connecting and saying hello if needed).
    func client() throws(WireError) -> Connection {
        if let live = connection.withLock({ $0 }) { return live }
        let credential = try signedInCredential()
        // Records' fields arrive with their text beside them: the mirror keeps that text as a
        // record's server fields instead of writing the parsed fields out again. Fields in the
        // sync-service's stored form (all of a mirror's own) come as that text alone, with no
        // tree: a tree of a page's fields, a dictionary per field, was half of parsing it.
        let fieldsAsText = JSONParser.KeptText(key: "fields", depth: nil, textOnly: { bytes, start in StoredFields.end(bytes, from: start) })
        let client = try WireClient(socketPath: options.syncSocket, timeout: .seconds(60), keeping: fieldsAsText)
        let hello = try client.callBlocking("hello", HelloParams(client: "store-service mirror (\(options.deviceName))", credential: credential))
        guard let user = hello["user"]?.stringValue else {
            client.close()
            throw WireError(.notAuthenticated, "The sync-service did not identify a user for the mirror's credential.")
        }
        if options.mode == .automatic {
            _ = try? client.callBlocking("subscribe", ["topics": ["databaseChanges"]] as JSONValue)
            let events = client.events
            Task.detached { [weak self] in
                for await event in events where event.name == "databaseChanged" { self?.poke() }
            }
        }
        let live = Connection(client: client, user: user)
        do {
            try signIn(user)
        } catch {
            client.close()
            throw WireError(.internalError, "The mirror could not switch its local data to user \(user): \(error)")
        }
        connection.withLock { $0 = live }
        logger.info("connected to the sync-service", ["socket": .string(options.syncSocket), "user": .string(user)])
        return live
    }

    /// One request to the sync-service. A broken connection is dropped so the next call reconnects.
    func call(_ op: String, _ params: JSONValue) throws(WireError) -> JSONValue {
        try request(op, params)
    }

    /// `call` with typed params, encoded once (no JSON tree in between).
    func request<P: Encodable>(_ op: String, _ params: P, retried alreadyRetried: Bool = false) throws(WireError) -> JSONValue {
        var retried = alreadyRetried
        while true {
            let live = try client()
            do {
                return try live.client.callBlocking(op, params)
            } catch {
                guard [.connectionClosed, .networkUnavailable, .timedOut].contains(error.code) else { throw error }
                connection.withLock { $0 = nil }
                live.client.close()
                // A connection that died while idle (the sync-service restarted): one fresh try.
                // Every mirror request is safe to repeat (tags and record names make saves idempotent).
                guard !retried, error.code == .connectionClosed else { throw error }
                retried = true
            }
        }
    }

    /// `value` without the members the reply parse added (`client()`), and with the fields it
    /// kept as text alone parsed back: for sync-service results handed to the device's clients
    /// (share ops, error details). The mirror's own reads keep them.
    static func withoutKeptTexts(_ value: JSONValue) -> JSONValue {
        switch value {
        case let .object(members):
            var kept: [String: JSONValue] = [:]
            for (key, member) in members {
                if key.hasSuffix(JSONParser.textSuffix) {
                    let name = String(key.dropLast(JSONParser.textSuffix.count))
                    if members[name] == nil, let text = member.stringValue, let parsed = try? JSONParser.parse(text) { kept[name] = parsed }
                } else {
                    kept[key] = withoutKeptTexts(member)
                }
            }
            return .object(kept)
        case let .array(elements): return .array(elements.map(withoutKeptTexts))
        default: return value
        }
    }

    /// Sends a request without waiting (the reply is decoded on the client's reader thread
    /// while this thread works on): `wait()` gives the reply.
    func begin<P: Encodable>(_ op: String, _ params: P, decode: (@Sendable (JSONValue) -> any Sendable)? = nil) -> ReplyWaiter {
        let waiter = ReplyWaiter(decode: decode)
        begin(op, params, into: waiter)
        return waiter
    }

    /// `begin` with a waiter made beforehand (so it can be queued before its reply can come).
    /// `connecting: false` only uses a live connection (from the client's own reader thread a
    /// reconnect, with its hello and sign-in, must not run); without one the waiter fails, and
    /// its reader falls back to asking itself.
    func begin<P: Encodable>(_ op: String, _ params: P, into waiter: ReplyWaiter, connecting: Bool = true) {
        do throws(WireError) {
            guard connecting || connection.withLock({ $0 }) != nil else {
                throw WireError(.networkUnavailable, "The mirror's connection to the sync-service closed.")
            }
            let client = try client().client
            waiter.client = client
            client.send(op, params) { waiter.resolve($0) }
        } catch {
            waiter.resolve(.failure(error))
        }
    }

    /// The reply to a request sent with `begin`; a connection that died while idle gets the
    /// one fresh try `request` gives.
    func finish<P: Encodable>(_ waiter: ReplyWaiter, _ op: String, _ params: P) -> Result<JSONValue, WireError> {
        let result = waiter.wait()
        guard case let .failure(error) = result, [.connectionClosed, .networkUnavailable, .timedOut].contains(error.code) else { return result }
        // Only the connection this request went out on: with batches in flight, an earlier
        // one's retry may already have connected again, and that connection is not broken.
        connection.withLock { live in
            if let sentOn = waiter.client, let current = live?.client, current !== sentOn { return }
            live?.client.close()
            live = nil
        }
        guard error.code == .connectionClosed else { return result }
        do { return .success(try request(op, params, retried: true)) } catch { return .failure(error) }
    }

    /// `call` as a Result, for callers that handle some error codes and rethrow the rest.
    func attempt<P: Encodable>(_ op: String, _ params: P) -> Result<JSONValue, WireError> {
        do { return .success(try request(op, params)) } catch { return .failure(error) }
    }

    var user: String? { connection.withLock { $0?.user } }

    // MARK: Stores

    func withStores<T>(_ body: (StoreSet) throws -> T) throws -> T {
        try engine.coordinator.withStores(body)
    }

    static func storeIndex(_ scope: StoreScope, in stores: StoreSet) -> Int? {
        stores.list.firstIndex { $0.scope == scope }
    }

    static func database(of store: PersistentStore) -> String { store.scope == .private ? "private" : "shared" }

    // MARK: Ingest: history → outgoing queue

    /// Moves the store's history after the export cursor into the queue, skipping the mirror's
    /// own imports (author `sync`: no echo). One SQLite transaction: queue and cursor together.
    func ingest(_ store: PersistentStore) throws {
        try ingest(store, enough: nil)
    }

    /// `enough`: stops (at a transaction's end) once that many changes were queued, so a send
    /// puts its first batch on the wire before the rest of a large history is queued, and the
    /// rest is queued while the server works (the send's next batches ask for more).
    /// Returns whether history is left unqueued (it stopped at `enough`).
    @discardableResult
    func ingest(_ store: PersistentStore, enough: Int?) throws -> Bool {
        let state = MirrorState(store)
        var queued = 0
        var cache = IngestCache()
        while true {
            let cursor = Int(try state.value(MirrorState.exportCursorKey) ?? "0") ?? 0
            if try historyWasPurged(after: cursor, store: store) {
                try store.database.transaction { try queueByComparison(state) }
                continue
            }
            let transactions = try PersistentHistory.fetchStored(store, afterToken: cursor, limit: enough == nil ? 2000 : 16,
                                                                 skippingChangesOf: SaveOperation.syncAuthor)
            guard !transactions.isEmpty else { return false }
            var faults: [String] = []
            var reachedEnough = false
            try store.database.transaction(commit: .deferred) {
                var last = cursor
                for transaction in transactions {
                    if transaction.author != SaveOperation.syncAuthor {
                        let time = MirrorRecordCoding.seconds(iso: transaction.timestamp) ?? Date().timeIntervalSince1970
                        for change in transaction.entries {
                            faults += try ingest(change, time: time, state: state, cache: &cache)
                        }
                        if !cache.inserted.isEmpty {
                            try state.dropFieldTimes(cache.inserted)
                            cache.inserted.removeAll(keepingCapacity: true)
                        }
                        queued += transaction.entries.count
                    }
                    last = transaction.token
                    if let enough, queued >= enough { reachedEnough = true; break }
                }
                try state.setValue(MirrorState.exportCursorKey, String(last))
            }
            for zone in faults {
                // Seed 002: what iOS prints, exactly; the device keeps running.
                logger.rawLine("CoreData: fault: Illegal attempt to work with the core-data or default zone in the shared database: \(zone)")
            }
            if reachedEnough { return true }
        }
    }

    /// Whether a client purged history the mirror had not queued yet (history.purge).
    private func historyWasPurged(after cursor: Int, store: PersistentStore) throws -> Bool {
        let last = Int(store.lastToken)
        guard last > cursor else { return false }
        let oldest = try store.database.scalar("SELECT min(token) FROM z_transaction")?.int
        return (oldest ?? last + 1) > cursor + 1
    }

    /// History the mirror needed is gone: the queue is rebuilt by comparing every row with what
    /// the cloud last had (its ancestor fields): new rows are queued as inserts, changed fields as
    /// updates, known records without a row as deletes. Then the cursor moves to the newest token.
    private func queueByComparison(_ state: MirrorState) throws {
        let store = state.store
        var present: Set<String> = []
        for entity in store.entities.values {
            for row in try store.database.query("SELECT z_pk, z_uuid, z_zone FROM \(PersistentStore.table(entity.name))") {
                guard let key = row[0].int64, let uuid = row[1].string else { continue }
                present.insert(uuid)
                if store.scope == .shared, row[2].isNull { continue }
                guard let stored = try store.read(entity, primaryKey: key) else { continue }
                let fields = MirrorRecordCoding.dataFields(try MirrorRecordCoding.fields(entity: entity, row: stored, state: state, timesText: nil))
                guard let meta = try state.meta(uuid, withFields: true) else {
                    try state.enqueue(uuid: uuid, entity: entity.name, kind: .insert, zone: nil, changed: Set(fields.keys))
                    continue
                }
                let ancestor = MirrorRecordCoding.dataFields(meta.serverFields)
                let changed = Set(fields.keys).union(ancestor.keys).filter { fields[$0] != ancestor[$0] }
                if !changed.isEmpty {
                    let stamp = FieldStamp(time: Date().timeIntervalSince1970, device: options.deviceName)
                    try state.setFieldTimes(uuid, Dictionary(uniqueKeysWithValues: changed.map { ($0, stamp) }))
                    try state.enqueue(uuid: uuid, entity: entity.name, kind: .update, zone: nil, changed: changed)
                }
            }
        }
        for row in try store.database.query("SELECT uuid, entity, zone_name, owner_name FROM mirror_meta") {
            guard let uuid = row[0].string, !present.contains(uuid) else { continue }
            try state.enqueue(uuid: uuid, entity: row[1].string ?? "", kind: .delete,
                              zone: MirrorZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? ""), changed: [])
        }
        try state.setValue(MirrorState.exportCursorKey, String(store.lastToken))
        logger.notice("history the mirror had not queued was purged; the queue was rebuilt by comparing rows with the cloud's copies",
                      ["store": .string(store.name)])
    }

    static let sharedDefaultZoneDescription =
        "<CKRecordZoneID: zoneName=\(MirrorState.coreDataZone), ownerName=\(MirrorState.defaultOwner)>"

    /// Queues one history change; returns the zone descriptions of seed-002 faults it hit.
    /// A new object's queue and stamps texts for the last changed-property list and stamp: a
    /// bulk save's inserts repeat both, and building them per object was a twentieth of a send.
    struct IngestCache {
        var key: (changed: [String], stamp: FieldStamp)?
        var names: Set<String> = []
        var changedText = ""
        var stampsText = ""
        /// New objects of the history transaction being queued: any stamps row their uuids
        /// still have (an earlier life of the uuid) is dropped once, after the transaction.
        var inserted: [String] = []
    }

    private func ingest(_ change: HistoryChanges.Entry, time: Double, state: MirrorState, cache: inout IngestCache) throws -> [String] {
        let store = state.store
        guard let entity = store.model.entity(named: change.entity) else { return [] }
        let kind = change.kind
        if kind == .delete {
            try state.clearUnexportable(change.uuid)
            try state.enqueue(uuid: change.uuid, entity: entity.name, kind: .delete, zone: try state.meta(change.uuid)?.zone, changed: [])
            return []
        }
        if store.scope == .shared {
            let key = change.primaryKey
            // A row gone since (its delete follows in history) is not looked at.
            guard let row = try store.read(entity, primaryKey: key) else { return [] }
            if row.zone == nil {
                if try state.markUnexportable(uuid: change.uuid, objectID: store.objectID(entity.name, key).uri, zone: Self.sharedDefaultZoneDescription) {
                    return [Self.sharedDefaultZoneDescription]
                }
                return []
            }
        }
        let stamp = FieldStamp(time: time, device: options.deviceName)
        if kind == .insert {
            // A new object: its stamps are these alone, one group (nothing to read and merge).
            let changed = change.changed ?? []
            if cache.key?.changed != changed || cache.key?.stamp != stamp {
                cache.names = Set(changed.map(MirrorRecordCoding.fieldName))
                let sorted = cache.names.sorted()
                cache.changedText = PersistentStore.jsonArray(sorted)
                cache.stampsText = FieldStamp.encode(sorted, stamp)
                cache.key = (changed, stamp)
            }
            // Its stamps ride in its queue entry (a stale stamps row would hide them: see `inserted`).
            cache.inserted.append(change.uuid)
            try state.enqueue(uuid: change.uuid, entity: entity.name, kind: kind, zone: nil, changed: cache.names, new: true,
                              changedText: cache.changedText, timesText: cache.names.isEmpty ? nil : cache.stampsText,
                              primaryKey: change.primaryKey)
            return []
        }
        let names = Set((change.changed ?? []).map(MirrorRecordCoding.fieldName))
        try state.setFieldTimes(change.uuid, Dictionary(uniqueKeysWithValues: names.map { ($0, stamp) }))
        try state.enqueue(uuid: change.uuid, entity: entity.name, kind: kind, zone: nil, changed: names, primaryKey: change.primaryKey)
        return []
    }

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
    }

    /// Writes `changes` into one store in one save by author `sync` (history, remote-change
    /// events; no permission check, no echo). Relationships name records; a record not present
    /// yet is returned so the caller can apply it again later.
    @discardableResult
    func applyLocally(_ changes: [LocalChange], storeIndex: Int, stores: StoreSet) throws -> [LocalChange] {
        guard !changes.isEmpty else { return [] }
        let store = stores.list[storeIndex]
        let state = MirrorState(store)
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
                let cacheKey = destination + "/" + target
                if keys[cacheKey] == nil { keys[cacheKey] = .some(try state.primaryKey(entity: destination, uuid: target)) }
                if let related = byUUID[target], !related.isDeleted {
                    value = .string(related.uri)
                } else if let key = keys[cacheKey] ?? nil {
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

    /// Delete rules run on the cloud's changes too (a session deleted in the cloud cascades to
    /// the events this device still relates to it). Those extra changes are this device's own
    /// decisions: they are queued for the cloud like a local save, so every copy converges
    /// (scenario 23). The changes the cloud sent are not (no echo).
    private func queueSideEffects(of result: SaveResult, applied: Set<String>, state: MirrorState) throws {
        guard let token = result.transactions.first(where: { $0.storeUUID == state.store.uuid })?.token else { return }
        for change in try PersistentHistory.changes(state.store, token: token) where !applied.contains(change.uuid) {
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
        engine.events.publish(topic: StoreEngine.remoteChangeTopic, event: Self.revertedEvent, data: data)
    }

    /// The row of `uuid` in `store` as record fields, or nil when it is gone.
    static func currentFields(entity: EntityDescription, uuid: String, state: MirrorState) throws -> [String: JSONValue]? {
        guard let key = try state.primaryKey(entity: entity.name, uuid: uuid),
              let row = try state.store.read(entity, primaryKey: key) else { return nil }
        return try MirrorRecordCoding.fields(entity: entity, row: row, state: state, timesText: try state.fieldTimesText(uuid))
    }

    // MARK: Automatic mode

    /// Starts the automatic-mode thread: it syncs after local saves (seen as new history) and
    /// cloud pushes, and backs off after failures (honouring retry-after deferrals).
    func startAutomatic() {
        guard options.mode == .automatic else { return }
        let thread = Thread { [self] in automaticLoop() }
        thread.name = "cloud-mirror"
        thread.start()
    }

    func poke() {
        poked.store(true, ordering: .relaxed)
        wakeLoop()
    }

    /// A local save committed: automatic mode wakes (its loop sees the new history token).
    func localSaveCommitted() {
        if options.mode == .automatic { wakeLoop() }
    }

    private func wakeLoop() { wake.signal() }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        poke()
        connection.withLock { $0?.client.close(); $0 = nil }
    }

    /// Every 0.2 s the loop looks at the stores' newest history tokens: a local save (a new
    /// token) starts a send at once, a cloud push a send and a fetch; otherwise it sends and
    /// fetches every 5 s (pushes can be lost). A pass a local save started does not fetch: the
    /// cloud pushes other devices' changes (and, as CloudKit, not a device's own), so fetching
    /// then would only bring this device's own records back. After a failure it waits out the
    /// backoff (1 s doubling to 60 s) first, and still owes the fetch it was to make.
    private func automaticLoop() {
        var seenTokens: [Int64] = []
        var lastFetch = Date.distantPast
        var notBefore = Date.distantPast
        var fetchOwed = true
        while !stopping.load(ordering: .relaxed) {
            let tokens = (try? withStores { stores in stores.list.map(\.lastToken) }) ?? []
            if poked.exchange(false, ordering: .relaxed) || Date().timeIntervalSince(lastFetch) >= 5 { fetchOwed = true }
            let due = fetchOwed || tokens != seenTokens
            if due && Date() >= notBefore && isSignedIn {
                do {
                    try exclusive("automatic") {
                        _ = try sendAll()
                        if fetchOwed {
                            lastFetch = Date()
                            _ = try fetchAll()
                            fetchOwed = false
                        }
                    }
                    notBefore = .distantPast
                } catch {
                    let backoff = progress.withLock { state -> Double in
                        state.backoffSeconds = min(60, max(1, state.backoffSeconds * 2))
                        return state.backoffSeconds
                    }
                    notBefore = Date().addingTimeInterval(backoff)
                }
                // A save during the sync (or the sync's own imports) moves the tokens again and
                // starts one more pass, which finds nothing new when nothing happened.
                seenTokens = tokens
            }
            _ = wake.wait(until: Date().addingTimeInterval(0.2))
        }
    }
}

/// Wakes a loop that waits between passes. A signal that comes while the loop is busy is kept
/// for its next wait (a bare condition signal was lost then, and a device caught a burst of saves
/// or pushes only at its next 0.2 s poll).
final class WakeSignal: Sendable {
    private let condition = NSCondition()
    /// Set under the condition's lock by `signal`, cleared by `wait`.
    private let pending = Atomic<Bool>(false)

    func signal() {
        condition.lock()
        pending.store(true, ordering: .relaxed)
        condition.signal()
        condition.unlock()
    }

    /// Waits until signalled (also before this call, since the last wait) or until `deadline`;
    /// true when signalled.
    func wait(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !pending.load(ordering: .relaxed), condition.wait(until: deadline) {}
        return pending.exchange(false, ordering: .relaxed)
    }
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

extension CloudMirror {
    static let accountKey = "accountUser"
    static let signedOutKey = "signedOut"

    var isSignedIn: Bool { credential.withLock { $0 != nil } }

    /// The credential to sign in with; sync steps fail at once while signed out, even with
    /// nothing to send.
    @discardableResult
    func signedInCredential() throws(WireError) -> String {
        guard let credential = credential.withLock({ $0 }) else {
            throw WireError(.notAuthenticated, "No cloud account is signed in on this device (account.signOut); call account.signIn to sync again. Local saves keep working and are uploaded after sign-in.")
        }
        return credential
    }

    /// What `account.signOut` / `account.signIn` answer.
    struct AccountResult: Codable, Sendable {
        var signedIn: Bool
        var user: String?
        /// Local objects removed by the sign-out (the account's mirrored data).
        var objectsRemoved: Int?
    }

    /// Scenario 35, sign-out: the device stops syncing, and the data it mirrored leaves the
    /// stores with the queues, tokens and cloud metadata, as iOS does when the iCloud account
    /// signs out. Saves keep working while signed out; they are uploaded after the next sign-in.
    func signOut() throws -> AccountResult {
        let previous = user
        connection.withLock { $0?.client.close(); $0 = nil }
        credential.withLock { $0 = nil }
        let removed = try withStores { stores -> Int in
            let removed = try clearLocalData(stores)
            if let index = Self.storeIndex(.private, in: stores) {
                let state = MirrorState(stores.list[index])
                try state.setValue(Self.accountKey, nil)
                try state.setValue(Self.signedOutKey, "1")
            }
            return removed
        }
        logger.notice("signed out of the cloud account: its data left this device", ["previousUser": .string(previous ?? ""), "objectsRemoved": .int(removed)])
        return AccountResult(signedIn: false, user: nil, objectsRemoved: removed)
    }

    /// Signs in with `newCredential` (default: the start-up credential) and connects now, so a
    /// bad credential is answered here. Another user's account first clears the local data (as
    /// an account switch does); local rows saved while signed out are uploaded by the next send.
    func signIn(credential newCredential: String?) throws -> AccountResult {
        let chosen = newCredential ?? options.credential
        let previous = credential.withLock { current -> String? in
            defer { current = chosen }
            return current
        }
        if previous != chosen { connection.withLock { $0?.client.close(); $0 = nil } }
        do {
            let live = try client()
            try withStores { stores in
                if let index = Self.storeIndex(.private, in: stores) { try MirrorState(stores.list[index]).setValue(Self.signedOutKey, nil) }
            }
            return AccountResult(signedIn: true, user: live.user)
        } catch {
            // A refused credential leaves the device as it was.
            credential.withLock { $0 = previous }
            throw error
        }
    }

    /// Removes every object of every store (as deletes the mirror never exports) and the
    /// mirror's bookkeeping; the export cursor moves past it all. Returns how many objects went.
    private func clearLocalData(_ stores: StoreSet) throws -> Int {
        var removed = 0
        for (index, store) in stores.list.enumerated() {
            var wipe: [LocalChange] = []
            for entity in store.entities.values {
                for row in try store.database.query("SELECT z_uuid FROM \(PersistentStore.table(entity.name))") {
                    if let uuid = row[0].string { wipe.append(LocalChange(uuid: uuid, entity: entity, fields: nil, zone: nil)) }
                }
            }
            removed += wipe.count
            try applyLocally(wipe, storeIndex: index, stores: stores)
            try store.database.transaction {
                try store.database.execute("""
                    DELETE FROM mirror_pending; DELETE FROM mirror_meta; DELETE FROM mirror_fieldtimes;
                    DELETE FROM mirror_unexportable; DELETE FROM mirror_share; DELETE FROM z_share;
                    DELETE FROM mirror_kv WHERE key NOT IN ('\(MirrorState.exportCursorKey)', '\(Self.signedOutKey)');
                    """)
                try MirrorState(store).setValue(MirrorState.exportCursorKey, String(store.lastToken))
            }
        }
        progress.withLock { $0.zonesEnsured = [] }
        return removed
    }

    /// Scenario 35: the stores remember the cloud user they mirror. Another user's credential
    /// (an account switch) clears the local data, the queues and the tokens first, as iOS does
    /// when the iCloud account changes. The first sign-in uploads what is already there once:
    /// it is all in history, after the export cursor.
    func signIn(_ user: String) throws {
        try withStores { stores in
            guard let privateIndex = Self.storeIndex(.private, in: stores) else { return }
            let known = try MirrorState(stores.list[privateIndex]).value(Self.accountKey)
            if let known, known != user {
                logger.notice("the cloud account changed: local data and sync state are cleared",
                              ["previousUser": .string(known), "user": .string(user)])
                _ = try clearLocalData(stores)
            }
            if known != user { try MirrorState(stores.list[privateIndex]).setValue(Self.accountKey, user) }
        }
    }
}

/// One reply awaited by a blocking thread (the mirror's threads are never Swift tasks).
final class ReplyWaiter: Sendable {
    private let reply = Mutex<Result<JSONValue, WireError>?>(nil)
    /// Runs on the client's reader thread when a reply succeeds, so that work is done before
    /// the waiting thread wakes (a fetch decodes the next page while it applies this one).
    private let decode: (@Sendable (JSONValue) -> any Sendable)?
    private let decodedValue = Mutex<(any Sendable)?>(nil)

    init(decode: (@Sendable (JSONValue) -> any Sendable)? = nil) { self.decode = decode }

    /// What `decode` made of the reply, once `wait` has returned a success.
    func decoded<T>(as type: T.Type) -> T? { decodedValue.withLock { $0 as? T } }
    private let sentOn = Mutex<WireClient?>(nil)
    /// The connection the request went out on.
    var client: WireClient? {
        get { sentOn.withLock { $0 } }
        set { sentOn.withLock { $0 = newValue } }
    }
    private let semaphore = DispatchSemaphore(value: 0)

    func resolve(_ result: Result<JSONValue, WireError>) {
        if let decode, case let .success(value) = result {
            let decoded = decode(value)
            decodedValue.withLock { $0 = decoded }
        }
        reply.withLock { $0 = result }
        semaphore.signal()
    }

    func wait() -> Result<JSONValue, WireError> {
        semaphore.wait()
        return reply.withLock { $0! }
    }
}
