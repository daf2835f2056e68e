import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

/// A real store-service process on a short temp socket, and helpers to talk to it.
final class StoreFixture: Sendable {
    let directory: TemporaryDirectory
    let process: MeowProcess
    let socket: String
    let dataDirectory: String?

    private init(directory: TemporaryDirectory, process: MeowProcess, socket: String, dataDirectory: String?) {
        self.directory = directory
        self.process = process
        self.socket = socket
        self.dataDirectory = dataDirectory
    }

    /// Starts store-service; `onDisk` keeps the stores in `<tmp>/data`.
    static func start(onDisk: Bool = false, _ extra: [String] = [], directory: TemporaryDirectory = TemporaryDirectory()) async throws -> StoreFixture {
        let socket = directory.file("s.sock")
        let data = onDisk ? directory.file("data") : nil
        let persistence = data.map { ["--data-dir", $0] } ?? ["--in-memory"]
        let process = try await MeowProcess.start("store-service", ["--socket", socket] + persistence + extra)
        return StoreFixture(directory: directory, process: process, socket: socket, dataDirectory: data)
    }

    /// Starts store-service (in memory) on `model`, a model in the JSON form.
    static func start(model: JSONValue, _ extra: [String] = [], directory: TemporaryDirectory = TemporaryDirectory()) async throws -> StoreFixture {
        let path = directory.file("model.json")
        try JSONWriter.text(model).write(toFile: path, atomically: true, encoding: .utf8)
        return try await start(["--model", path] + extra, directory: directory)
    }

    /// A connected client that has said hello.
    func client(_ name: String = "test") async throws -> StoreClient {
        let client = try WireClient(socketPath: socket)
        try await client.hello(client: name)
        return StoreClient(wire: client)
    }

    func stop() async -> Int32? { await process.stop() }
}

/// A thin typed layer over WireClient for the store-service's ops.
struct StoreClient: Sendable {
    let wire: WireClient

    @discardableResult
    func call(_ op: String, _ params: JSONValue = [:]) async throws(WireError) -> JSONValue {
        try await wire.call(op, params)
    }

    /// Calls `op` expecting the error `code`; returns it.
    func failure(_ op: String, _ params: JSONValue) async throws -> WireError {
        do {
            let result = try await wire.call(op, params)
            throw TestFailure("\(op) succeeded but an error was expected: \(result)")
        } catch let error as WireError {
            return error
        }
    }

    func openContext(_ policy: String = "error", name: String = "test") async throws -> String {
        let result = try await call("context.open", ["mergePolicy": .string(policy), "name": .string(name)])
        return try #require(result["context"]?.stringValue)
    }

    /// Inserts one object of `entity` into `context`; returns its temporary ID.
    func insert(_ context: String, _ entity: String, _ values: JSONValue) async throws -> String {
        try #require(try await call("object.insert", ["context": .string(context), "entity": .string(entity), "values": values])["objectID"]?.stringValue)
    }

    /// Inserts one CareEvent with valid values; `extra` overrides or adds values.
    func insertEvent(_ context: String, id: String, store: String? = nil, extra: [String: JSONValue] = [:]) async throws -> String {
        var values: [String: JSONValue] = ["id": .string(id), "eventTypeRaw": "note",
                                           "occurredAt": "2026-07-27T09:00:00Z", "updatedAt": "2026-07-27T09:00:00Z"]
        for (key, value) in extra { values[key] = value }
        var params: [String: JSONValue] = ["context": .string(context), "entity": "CareEvent", "values": .object(values)]
        if let store { params["store"] = .string(store) }
        return try #require(try await call("object.insert", .object(params))["objectID"]?.stringValue)
    }

    func insertSession(_ context: String, id: String, store: String? = nil) async throws -> String {
        var params: [String: JSONValue] = ["context": .string(context), "entity": "CareSession", "values": ["id": .string(id)]]
        if let store { params["store"] = .string(store) }
        return try #require(try await call("object.insert", .object(params))["objectID"]?.stringValue)
    }

    func save(_ context: String) async throws(WireError) -> JSONValue {
        try await call("context.save", ["context": .string(context)])
    }

    struct Insertion: Equatable {
        var temporaryID: String
        var objectID: String
        var store: String
        var reason: String
    }

    /// A save result's inserted objects (from `inserted`, or flattened from `insertedGroups`).
    static func insertions(_ save: JSONValue) -> [Insertion] {
        if let list = save["inserted"]?.arrayValue {
            return list.map {
                Insertion(temporaryID: $0["temporaryID"]?.stringValue ?? "", objectID: $0["objectID"]?.stringValue ?? "",
                          store: $0["store"]?.stringValue ?? "", reason: $0["reason"]?.stringValue ?? "")
            }
        }
        return (save["insertedGroups"]?.arrayValue ?? []).flatMap { group -> [Insertion] in
            let temporary = group["temporaryIDs"]?.arrayValue ?? []
            let permanent = group["objectIDs"]?.arrayValue ?? []
            return zip(temporary, permanent).map {
                Insertion(temporaryID: $0.stringValue ?? "", objectID: $1.stringValue ?? "",
                          store: group["store"]?.stringValue ?? "", reason: group["reason"]?.stringValue ?? "")
            }
        }
    }

    static func insertion(_ save: JSONValue, _ temporaryID: String) throws -> Insertion {
        try #require(insertions(save).first { $0.temporaryID == temporaryID })
    }

    /// The permanent ID a save gave the object inserted as `temporaryID`.
    static func permanentID(_ save: JSONValue, _ temporaryID: String) throws -> String {
        try insertion(save, temporaryID).objectID
    }

    func get(_ objectID: String, context: String? = nil) async throws(WireError) -> JSONValue {
        var params: [String: JSONValue] = ["objectID": .string(objectID)]
        if let context { params["context"] = .string(context) }
        return try await call("object.get", .object(params))
    }

    func count(_ entity: String, predicate: String? = nil, stores: [String]? = nil) async throws -> Int {
        var params: [String: JSONValue] = ["entity": .string(entity)]
        if let predicate { params["predicate"] = .string(predicate) }
        if let stores { params["stores"] = .array(stores.map { .string($0) }) }
        return try #require(try await call("fetch.count", .object(params))["count"]?.intValue)
    }

    func close() { wire.close() }
}
