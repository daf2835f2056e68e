import Foundation
import MeowCareCluster
import MeowWire
import Testing
import TestSupport

/// One real sync-service (the cloud) with users owner, alice (participant P) and bob: a
/// MeowCluster with no devices of its own, in `directory`, so a cloud started again on the same
/// directory finds its data. Devices join it with `Device.start`.
final class Cloud: Sendable {
    static let adminCredential = "admin-secret-for-tests"
    let directory: TemporaryDirectory
    let cluster: MeowCluster

    private init(directory: TemporaryDirectory, cluster: MeowCluster) {
        self.directory = directory
        self.cluster = cluster
    }

    var process: MeowProcess { cluster.cloudProcess! }
    var socket: String { cluster.cloud.socketPath }

    static func start(directory: TemporaryDirectory = TemporaryDirectory(prefix: "mi"), onDisk: Bool = false,
                      environment: [String: String]? = nil) async throws -> Cloud {
        var configuration = MeowClusterConfiguration(devices: [])
        configuration.additionalUsers = ["owner", "alice", "bob"]
        configuration.credentials = ["owner": "owner-secret", "alice": "alice-secret", "bob": "bob-secret"]
        configuration.adminCredential = adminCredential
        configuration.persistence = onDisk ? .sqlite : .inMemory
        configuration.cloudEnvironment = environment ?? [:]
        configuration.directory = directory.path
        configuration.externalDeployment = nil
        return Cloud(directory: directory, cluster: try await MeowCluster.start(configuration))
    }

    /// A client of `user`'s own writing to their private database directly (another app, or
    /// another user's activity), with Core Data's zone saved. Close it when done.
    func writer(_ user: String) async throws -> WireClient {
        let client = try await connect("\(user)-secret")
        _ = try await client.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "com.apple.coredata.cloudkit.zone"]]])
        return client
    }

    /// A client of the cloud itself (a user's or the admin's), to look at what the server holds.
    func connect(_ credential: String) async throws -> WireClient {
        let client = try WireClient(socketPath: socket)
        try await client.hello(client: "mirror-tests", credential: credential)
        return client
    }

    func admin(_ op: String, _ params: JSONValue) async throws -> JSONValue {
        let client = try await connect(Self.adminCredential)
        defer { client.close() }
        return try await client.call(op, params)
    }

    /// The live records of one zone as the user sees them (changes from nil).
    func records(user: String, database: String = "private", zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]) async throws -> [JSONValue] {
        let client = try await connect("\(user)-secret")
        defer { client.close() }
        var all: [JSONValue] = []
        var token: JSONValue = .null
        while true {
            let page = try await client.call("changes.fetchZone", ["database": .string(database), "zoneID": zone, "since": token, "limit": 10000])
            all += page["changed"]?.arrayValue ?? []
            token = page["token"] ?? .null
            if page["moreComing"] != true { break }
        }
        return all
    }

    /// Runs `op` on a connection of its own to `device` while the cloud holds the first request
    /// `held` of `user` (naming `zone`, when given) it makes (a `hold` fault): `move` runs once
    /// that request is at the server, then it is released. Returns the op's answer, or its error.
    func whileHeld(_ held: String, of user: String = "owner", zone: String? = nil, recordType: String? = nil, device: Device, op: String,
                   _ params: JSONValue = [:], move: () async throws -> Void) async throws -> Result<JSONValue, WireError> {
        var fault: [String: JSONValue] = ["effect": "hold", "op": .string(held), "user": .string(user)]
        if let zone { fault["zone"] = .string(zone) }
        if let recordType { fault["recordType"] = .string(recordType) }
        _ = try await admin("admin.injectFault", .object(fault))
        let client = try WireClient(socketPath: device.socket)
        defer { client.close() }
        try await client.hello(client: "held-\(op)")
        let answer = Task { () -> Result<JSONValue, WireError> in
            do { return .success(try await client.call(op, params)) } catch let error as WireError { return .failure(error) } catch {
                return .failure(WireError(ErrorCode("internalError"), "\(error)"))
            }
        }
        #expect(try await admin("admin.awaitHeldRequests", [:])["held"] == 1)
        try await move()
        #expect(try await admin("admin.releaseHeldRequests", [:])["released"] == 1)
        return await answer.value
    }

    /// A field's value (`CD_…`) on the CareEvent `id` in one of the owner's zones (nil: no such record or field).
    func eventField(_ field: String, of id: String, zoneName: String) async throws -> JSONValue? {
        try await records(user: "owner", zone: ["zoneName": .string(zoneName)])
            .first { $0["fields"]?["CD_id"]?["value"]?.stringValue == id }?["fields"]?[field]?["value"]
    }

    /// The ids (`CD_id`) of the CareEvents in one of the owner's zones, sorted.
    func eventIDs(user: String = "owner", zoneName: String) async throws -> [String] {
        try await records(user: user, zone: ["zoneName": .string(zoneName)]).filter { $0["recordType"] == "CD_CareEvent" }
            .compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue }.sorted()
    }

    func stop() async { _ = await process.stop() }
}

/// One device: a real store-service mirroring to the cloud as `user`, started in the cloud's
/// cluster, and a raw connection to it (its errors are the service's `WireError`s).
final class Device: Sendable {
    let name: String
    let process: MeowProcess
    let socket: String
    let client: WireClient
    let dataDirectory: String?

    private init(name: String, process: MeowProcess, socket: String, client: WireClient, dataDirectory: String?) {
        self.name = name
        self.process = process
        self.socket = socket
        self.client = client
        self.dataDirectory = dataDirectory
    }

    /// `orphanRepair`: run the start-up orphan repair (off by default: it makes a default session).
    /// `syncSocket`: where the device reaches the cloud, when not its socket (a `meowctl tap` in between).
    static func start(_ name: String, user: String, cloud: Cloud, extra: [String] = [], dataDirectory: String? = nil,
                      environment: [String: String]? = nil, orphanRepair: Bool = false, syncSocket: String? = nil) async throws -> Device {
        let device = try await cloud.cluster.addDevice(MeowClusterConfiguration.Device(
            name: name, user: user, arguments: extra, environment: environment ?? [:], persistence: dataDirectory == nil ? .inMemory : .sqlite,
            dataDirectory: dataDirectory, orphanRepair: orphanRepair, syncSocket: syncSocket))
        let client = try WireClient(socketPath: device.socketPath)
        try await client.hello(client: "mirror-tests-\(name)")
        return Device(name: name, process: cloud.cluster.process(of: name)!, socket: device.socketPath, client: client, dataDirectory: dataDirectory)
    }

    @discardableResult
    func call(_ op: String, _ params: JSONValue = [:]) async throws -> JSONValue {
        try await client.call(op, params)
    }

    /// Calls `op` expecting an error; returns it.
    func failure(_ op: String, _ params: JSONValue = [:]) async throws -> WireError {
        do {
            let result = try await client.call(op, params)
            throw TestFailure("\(op) on \(name) succeeded but an error was expected: \(result)")
        } catch let error as WireError {
            return error
        }
    }

    @discardableResult func send() async throws -> JSONValue { try await call("sync.send") }
    @discardableResult func fetch() async throws -> JSONValue { try await call("sync.fetch") }
    @discardableResult func now() async throws -> JSONValue { try await call("sync.now") }
    func status() async throws -> JSONValue { try await call("sync.status") }

    /// A client of this device subscribed to `remoteChange` (close it when done).
    func remoteChangeWatcher(_ name: String = "watcher") async throws -> WireClient {
        let watcher = try WireClient(socketPath: socket)
        try await watcher.hello(client: name)
        _ = try await watcher.call("subscribe", ["topics": ["remoteChange"]])
        return watcher
    }

    func context(_ policy: String = "mergeByPropertyObjectTrump") async throws -> String {
        try #require(try await call("context.open", ["name": "ui", "mergePolicy": .string(policy)])["context"]?.stringValue)
    }

    static func eventValues(_ id: String, note: String? = nil, session: String? = nil, type: String = "bloodGlucose", value: Double = 120) -> JSONValue {
        var values: [String: JSONValue] = ["id": .string(id), "eventTypeRaw": .string(type), "occurredAt": "2026-07-27T09:00:00Z",
                                           "updatedAt": "2026-07-27T09:00:00Z", "value": .double(value)]
        if let note { values["note"] = .string(note) }
        if let session { values["session"] = .string(session) }
        return .object(values)
    }

    /// Inserts CareEvents `ids` (optionally in a session or a store) and saves; returns their permanent IDs.
    @discardableResult
    func insertEvents(_ ids: [String], session: String? = nil, store: String? = nil) async throws -> [String] {
        let context = try await context()
        var objects: [JSONValue] = []
        for id in ids {
            var item: [String: JSONValue] = ["entity": "CareEvent", "values": Self.eventValues(id, session: session)]
            if let store { item["store"] = .string(store) }
            objects.append(.object(item))
        }
        let inserted = try await call("object.insert", ["context": .string(context), "objects": .array(objects)])
        let temporary = inserted["objectIDs"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let saved = try await call("context.save", ["context": .string(context)])
        try await call("context.close", ["context": .string(context)])
        let map = Dictionary((saved["inserted"]?.arrayValue ?? []).compactMap { entry -> (String, String)? in
            guard let temporaryID = entry["temporaryID"]?.stringValue, let objectID = entry["objectID"]?.stringValue else { return nil }
            return (temporaryID, objectID)
        }, uniquingKeysWith: { first, _ in first })
        return temporary.compactMap { map[$0] }
    }

    /// Inserts and saves one CareSession; returns its permanent ID.
    func insertSession(_ id: String, title: String = "Mochi") async throws -> String {
        let context = try await context()
        let temporary = try #require(try await call("object.insert", ["context": .string(context), "entity": "CareSession",
                                                                       "values": ["id": .string(id), "title": .string(title)]])["objectID"]?.stringValue)
        let saved = try await call("context.save", ["context": .string(context)])
        try await call("context.close", ["context": .string(context)])
        return try #require(saved["inserted"]?.arrayValue?.first { $0["temporaryID"]?.stringValue == temporary }?["objectID"]?.stringValue)
    }

    /// Sets values on a saved object and saves.
    func set(_ objectID: String, _ values: JSONValue) async throws {
        let context = try await context()
        try await call("object.set", ["context": .string(context), "objectID": .string(objectID), "values": values])
        try await call("context.save", ["context": .string(context)])
        try await call("context.close", ["context": .string(context)])
    }

    /// Tries to set values; returns the save's error (the context is closed either way).
    func setFailing(_ objectID: String, _ values: JSONValue) async throws -> WireError {
        let context = try await context()
        try await call("object.set", ["context": .string(context), "objectID": .string(objectID), "values": values])
        let error = try await failure("context.save", ["context": .string(context)])
        try await call("context.close", ["context": .string(context)])
        return error
    }

    func delete(_ objectID: String) async throws {
        let context = try await context()
        try await call("object.delete", ["context": .string(context), "objectID": .string(objectID)])
        try await call("context.save", ["context": .string(context)])
        try await call("context.close", ["context": .string(context)])
    }

    /// Objects of `entity`, sorted by id.
    func objects(_ entity: String = "CareEvent", store: String? = nil, predicate: String? = nil) async throws -> [JSONValue] {
        var params: [String: JSONValue] = ["entity": .string(entity), "sortDescriptors": [["key": "id", "ascending": true]]]
        if let store { params["stores"] = [.string(store)] }
        if let predicate { params["predicate"] = .string(predicate) }
        return try await call("fetch", .object(params))["objects"]?.arrayValue ?? []
    }

    func ids(_ entity: String = "CareEvent", store: String? = nil) async throws -> [String] {
        try await objects(entity, store: store).compactMap { $0["values"]?["id"]?.stringValue }
    }

    /// The object whose business id is `id`.
    func object(id: String, entity: String = "CareEvent") async throws -> JSONValue? {
        try await objects(entity, predicate: "id == '\(id)'").first
    }

    /// Shares a saved object (`share.create`, no participants): the share zone's name.
    func share(_ objectID: String) async throws -> String {
        try #require(try await call("share.create", ["objectID": .string(objectID)])["zoneName"]?.stringValue, "\(name) did not share \(objectID)")
    }

    /// The objectID of the object whose business id is `id` (a test fails without one).
    func objectID(id: String, entity: String = "CareEvent") async throws -> String {
        try #require(try await object(id: id, entity: entity)?["objectID"]?.stringValue, "\(name) has no \(entity) \(id)")
    }

    func pending() async throws -> Int {
        try await status()["stores"]?.arrayValue?.reduce(0) { $0 + ($1["pending"]?.intValue ?? 0) } ?? -1
    }

    func stop() async -> Int32? {
        client.close()
        return await process.stop()
    }
}

