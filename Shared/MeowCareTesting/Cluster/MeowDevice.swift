import Synchronization

/// One device of a cluster: a store-service (its Core Data stack, mirroring to the cloud as
/// `user`), reached over one connection. Contexts belong to that connection; `events(_:)` and
/// `newConnection()` open more.
///
/// ```swift
/// let device = cluster["A"]
/// let session = try await device.insert("CareSession", ["id": "s1", "title": "Mochi"])
/// let sessions = try await device.fetch("CareSession", where: "title BEGINSWITH %@", ["Mo"])
/// ```
public final class MeowDevice: Sendable {
    public let name: String
    /// The cloud user the device mirrors as.
    public let user: String
    public let socketPath: String
    let connection: TracedConnection
    let lifecycle: ClusterLifecycle
    /// `model.get`'s answer: a store-service loads its model at start and never changes it, and
    /// a restarted device is a new `MeowDevice`, so the first answer holds for this one's life.
    private let loadedModel = Mutex<JSONValue?>(nil)

    init(name: String, user: String, socketPath: String, connection: TracedConnection, lifecycle: ClusterLifecycle) {
        self.name = name
        self.user = user
        self.socketPath = socketPath
        self.connection = connection
        self.lifecycle = lifecycle
    }

    /// The device's mirror ops: `sync.send`, `sync.fetch`, `sync.now`, `sync.status`, `sync.initializeSchema`.
    public var sync: DeviceSync { DeviceSync(connection: connection) }
    /// The device's share ops (the cloud's through its mirror, and the shared store's metadata).
    public var share: DeviceSharing { DeviceSharing(connection: connection) }
    /// `account.signIn` / `account.signOut`.
    public var account: DeviceAccount { DeviceAccount(connection: connection) }

    /// Any op, its params and result as JSON: the way to every op without a typed method.
    @discardableResult
    public func call(_ op: String, _ params: [String: JSONValue] = [:], timeout: Duration? = nil) async throws(MeowCareError) -> JSONValue {
        try await connection.call(op, params, timeout: timeout)
    }

    /// Any op, its result decoded as `R`.
    public func call<R: Decodable>(_ op: String, _ params: [String: JSONValue] = [:], as type: R.Type) async throws(MeowCareError) -> R {
        try await connection.call(op, params, as: type)
    }

    /// Another connection to the same device (its own contexts; a save there is not queued
    /// behind a long sync running on this one).
    public func newConnection() async throws(MeowCareError) -> MeowDevice {
        let extra = try await TracedConnection.open(socket: socketPath, service: name, label: "\(name)#\(Int.random(in: 100...999))", lifecycle: lifecycle)
        return MeowDevice(name: name, user: user, socketPath: socketPath, connection: extra, lifecycle: lifecycle)
    }

    // MARK: Contexts and one-step changes

    /// `context.open`. `mergePolicy`: `error` (Core Data's default), `mergeByPropertyStoreTrump`,
    /// `mergeByPropertyObjectTrump`, `overwrite`, `rollback`.
    public func openContext(name: String? = nil, author: String? = nil, mergePolicy: String? = nil) async throws(MeowCareError) -> MeowContext {
        var params: [String: JSONValue] = [:]
        if let name { params["name"] = .string(name) }
        if let author { params["author"] = .string(author) }
        if let mergePolicy { params["mergePolicy"] = .string(mergePolicy) }
        let opened = try await connection.call("context.open", params, as: ContextOpenResult.self)
        return MeowContext(id: opened.context, connection: connection)
    }

    /// Runs `body` in a new context and closes it afterwards (also when `body` throws).
    public func withContext<T: Sendable>(mergePolicy: String? = nil, _ body: (MeowContext) async throws -> T) async throws -> T {
        let context = try await openContext(name: "test", mergePolicy: mergePolicy)
        do {
            let result = try await body(context)
            try await context.close()
            return result
        } catch {
            try? await context.close()
            throw error
        }
    }

    /// A context for one step, closed afterwards whatever happens (an error leaves it unsaved).
    private func inContext<T>(_ name: String, _ body: (MeowContext) async throws(MeowCareError) -> T) async throws(MeowCareError) -> T {
        let context = try await openContext(name: name)
        do {
            let result = try await body(context)
            try await context.close()
            return result
        } catch {
            try? await context.close()
            throw error
        }
    }

    /// Inserts one object, saves it and returns it as saved.
    @discardableResult
    public func insert(_ entity: String, _ values: [String: JSONValue] = [:], store: String? = nil) async throws(MeowCareError) -> ManagedObject {
        let objectID = try await inContext("insert") { context throws(MeowCareError) -> String in
            let temporary = try await context.insert(entity, values, store: store)
            guard let objectID = try await context.save().objectID(for: temporary) else {
                throw MeowCareError(.internalError, "context.save did not report \(temporary).", op: "context.save", service: name)
            }
            return objectID
        }
        return try await object(objectID)
    }

    /// Sets values on a saved object and saves (one context, the error merge policy).
    @discardableResult
    public func update(_ objectID: String, _ values: [String: JSONValue]) async throws(MeowCareError) -> SaveResult {
        try await inContext("update") { context throws(MeowCareError) in
            _ = try await context.set(objectID, values)
            return try await context.save()
        }
    }

    /// Deletes a saved object and saves (its delete rules apply).
    @discardableResult
    public func delete(_ objectID: String) async throws(MeowCareError) -> SaveResult {
        try await inContext("delete") { context throws(MeowCareError) in
            try await context.delete(objectID)
            return try await context.save()
        }
    }

    // MARK: Reading

    /// `object.get`: the object as stored.
    public func object(_ objectID: String) async throws(MeowCareError) -> ManagedObject {
        try await connection.call("object.get", ["objectID": .string(objectID)], as: ManagedObject.self)
    }

    /// `fetch`: objects of `entity` matching an NSPredicate-format `predicate` (`%@` filled from
    /// `arguments`), both stores unless `stores` names some.
    public func fetch(_ entity: String, where predicate: String? = nil, _ arguments: [JSONValue] = [], sortedBy sort: [FetchSort] = [],
                      limit: Int? = nil, offset: Int? = nil, stores: [String]? = nil) async throws(MeowCareError) -> [ManagedObject] {
        let params = Self.fetchParams(entity, predicate, arguments, sort, limit, offset, stores, context: nil)
        return try await connection.call("fetch", params, as: FetchedObjects.self).objects
    }

    /// `fetch.count`.
    public func count(_ entity: String, where predicate: String? = nil, _ arguments: [JSONValue] = [], stores: [String]? = nil) async throws(MeowCareError) -> Int {
        let params = Self.fetchParams(entity, predicate, arguments, [], nil, nil, stores, context: nil)
        return try await connection.call("fetch.count", params, as: CountResult.self).count
    }

    static func fetchParams(_ entity: String, _ predicate: String?, _ arguments: [JSONValue], _ sort: [FetchSort], _ limit: Int?,
                            _ offset: Int?, _ stores: [String]?, context: String?) -> [String: JSONValue] {
        var params: [String: JSONValue] = ["entity": .string(entity)]
        if let predicate { params["predicate"] = .string(predicate) }
        if !arguments.isEmpty { params["arguments"] = .array(arguments) }
        if !sort.isEmpty { params["sortDescriptors"] = .array(sort.map(\.json)) }
        if let limit { params["limit"] = .int(limit) }
        if let offset { params["offset"] = .int(offset) }
        if let stores { params["stores"] = .array(stores.map { .string($0) }) }
        if let context { params["context"] = .string(context) }
        return params
    }

    /// `history.fetch`: transactions after `afterToken` (both stores unless `store`).
    public func history(store: String? = nil, afterToken: Int? = nil, limit: Int? = nil) async throws(MeowCareError) -> HistoryResult {
        var params: [String: JSONValue] = [:]
        if let store { params["store"] = .string(store) }
        if let afterToken { params["afterToken"] = .int(afterToken) }
        if let limit { params["limit"] = .int(limit) }
        return try await connection.call("history.fetch", params, as: HistoryResult.self)
    }

    /// `history.purge`: the number of transactions purged.
    @discardableResult
    public func purgeHistory(store: String, beforeToken: Int) async throws(MeowCareError) -> Int {
        try await connection.call("history.purge", ["store": .string(store), "beforeToken": .int(beforeToken)], as: HistoryPurgeResult.self).purgedTransactions
    }

    /// `store.list`: the stores in load order.
    public func stores() async throws(MeowCareError) -> [StoreDescription] {
        try await connection.call("store.list", as: StoreListResult.self).stores
    }

    /// `model.get`: the data model in use, in the model file's format (asked once per device).
    public func model() async throws(MeowCareError) -> JSONValue {
        if let known = loadedModel.withLock({ $0 }) { return known }
        let model = try await connection.call("model.get")
        loadedModel.withLock { $0 = model }
        return model
    }

    /// `permission.check`: NSPersistentCloudKitContainer's canUpdateRecord/canDeleteRecord answers.
    public func permissionCheck(_ objectIDs: [String] = []) async throws(MeowCareError) -> PermissionResult {
        try await connection.call("permission.check", objectIDs.isEmpty ? [:] : ["objectIDs": .array(objectIDs.map { .string($0) })], as: PermissionResult.self)
    }

    /// `repair.orphans` in the stores directly (as start-up runs it).
    @discardableResult
    public func repairOrphans() async throws(MeowCareError) -> OrphanRepairReport { try await connection.call("repair.orphans", as: OrphanRepairReport.self) }

    // MARK: Service

    /// `health`: whether every check is ok.
    public func isHealthy() async throws(MeowCareError) -> Bool { try await connection.call("health")["ready"] == true }

    /// `info`: who answered, persistence, connections, stores, ops.
    public func info() async throws(MeowCareError) -> JSONValue { try await connection.call("info") }

    /// Events of `topics` (`remoteChange`, `cloudKitEvents`, `service`) on a connection of their
    /// own; the sequence ends when the cluster stops.
    public func events(_ topics: [String] = ["remoteChange"]) async throws(MeowCareError) -> MeowEvents {
        let listener = try await TracedConnection.open(socket: socketPath, service: name, label: "\(name):events", lifecycle: lifecycle)
        return MeowEvents(try await listener.subscribe(topics))
    }

    // MARK: Clock

    /// `clock.set`: the device's clock reads `now` (seconds since 1970) from here on and keeps
    /// running; nil: the system's clock again.
    @discardableResult
    public func setClock(now: Double?) async throws(MeowCareError) -> DeviceClockState {
        try await connection.call("clock.set", ["now": now.map { .double($0) } ?? .null], as: DeviceClockState.self)
    }

    /// `clock.set` with no params: the device's clock as it reads now.
    public func clock() async throws(MeowCareError) -> DeviceClockState {
        try await connection.call("clock.set", [:], as: DeviceClockState.self)
    }

    /// `clock.set` with `advanceSeconds`: the device's clock moves `seconds` ahead.
    @discardableResult
    public func advanceClock(by seconds: Double) async throws(MeowCareError) -> DeviceClockState {
        try await connection.call("clock.set", ["advanceSeconds": .double(seconds)], as: DeviceClockState.self)
    }
}
