import Foundation
import MeowWire
@testable import ServiceRuntime
import Testing

@Suite("The operation registry and the ops every service answers")
struct OperationRegistryTests {
    @Test("a server's registry holds the core ops and the service's own, listed sorted in info")
    func registeredNames() async throws {
        let served = try ServedConnection()
        let core = ["hello", "health", "info", "ping", "subscribe", "unsubscribe"]
        let own = ["test.admin", "test.echoName", "test.fail", "test.items", "test.optional", "test.origin", "test.scanned", "test.whoami", "test.written"]
        #expect(served.server.registry.names == (core + own).sorted())
        #expect(served.server.registry.entry("test.admin")?.access == .admin)
        #expect(served.server.registry.entry("nope") == nil)
        try served.client.hello()
        let info = try served.client.call(#"{"id":2,"op":"info"}"#)
        #expect(info["result"]?["ops"] == .array((core + own).sorted().map { .string($0) }))
        _ = await served.end()
    }

    @Test("only params types that read themselves get a bytes reader, and it reads them")
    func paramsReaders() async throws {
        let served = try ServedConnection()
        let registry = served.server.registry
        #expect(registry.entry("test.echoName")?.readParams == nil)
        let reader = try #require(registry.entry("test.scanned")?.readParams)
        let bytes = Array(#"{"value":"v","other":[1,{"x":null}]}"#.utf8)
        let read = bytes.withUnsafeBufferPointer { try? reader($0) } as? ScannedParams
        #expect(read?.value == "v")
        #expect(read?.viaReader == true)
        let array: [UInt8] = Array("[1]".utf8)
        let refused = array.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<UInt8>) -> MessageReadError? in
            do throws(MessageReadError) { _ = try reader(buffer); return nil } catch { return error }
        }
        #expect(refused?.description == "the message: expected an object")
        #expect(refused?.wireError(op: "test.scanned").message == "'test.scanned': params must be an object.")
        _ = await served.end()
    }

    @Test("a result that writes its own text is written by its writer, chosen when the op is registered")
    func resultWriters() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        let written = try served.client.call(#"{"id":2,"op":"test.written"}"#)
        #expect(written["result"] == ["via": "writer"])
        let compact = try served.client.call(#"{"id":3,"op":"test.written","params":{}}"#)
        #expect(compact["result"] == ["via": "writer"])
        _ = await served.end()
    }

    @Test("a generic wrapper that hides a result's writer or a params reader stops a debug build at registration")
    func hiddenConformances() async {
        #if DEBUG
        await #expect(processExitsWith: .failure) { registerHidingWriter() }
        await #expect(processExitsWith: .failure) { registerHidingReader() }
        #endif
    }

    @Test("decoding failures become missingField or invalidField with a JSON path, and types are named for people")
    func decodingErrors() {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int?
            init(_ name: String) { stringValue = name }
            init(_ index: Int) { stringValue = "Index \(index)"; intValue = index }
            init?(stringValue: String) { self.init(stringValue) }
            init?(intValue: Int) { self.init(intValue) }
        }
        let path: [any CodingKey] = [Key("params"), Key("records"), Key(3)]
        let missing = DecodingError.keyNotFound(Key("zoneID"), .init(codingPath: path, debugDescription: "")).wireError(op: "x.y")
        #expect(missing.code == .missingField)
        #expect(missing.details["field"] == "params.records[3].zoneID")
        #expect(missing.message == "'x.y' needs params.records[3].zoneID.")
        let null = DecodingError.valueNotFound(String.self, .init(codingPath: path + [Key("name")], debugDescription: "")).wireError(op: "x.y")
        #expect(null.code == .missingField)
        #expect(null.message == "'x.y': params.records[3].name is null; it must be a string.")
        let mismatch = DecodingError.typeMismatch(Bool.self, .init(codingPath: [], debugDescription: "")).wireError(op: "x.y")
        #expect(mismatch.code == .invalidField)
        #expect(mismatch.details["field"] == "params")
        #expect(mismatch.details["expected"] == "a boolean")
        let corrupted = DecodingError.dataCorrupted(.init(codingPath: [Key("params"), Key("when")], debugDescription: "not a date")).wireError(op: "x.y")
        #expect(corrupted.message == "'x.y': params.when: not a date")
        let types: [Any.Type] = [String.self, Int64.self, Double.self, Bool.self, [Int].self, [String: Int].self, Empty.self]
        let names = types.map { DecodingError.typeName($0) }
        #expect(names == ["a string", "an integer", "a number", "a boolean", "an array", "an object", "a Empty value"])
    }

    @Test("health is ready only when every check is; the listener's check comes first")
    func health() async throws {
        for healthy in [true, false] {
            var definition = TestService()
            definition.healthy = healthy
            let served = try ServedConnection(definition)
            try served.client.hello()
            let health = try #require(try served.client.call(#"{"id":2,"op":"health"}"#)["result"])
            #expect(health["ready"] == .bool(healthy))
            #expect(health["status"] == (healthy ? "ready" : "notReady"))
            #expect(health["checks"]?.arrayValue?.map { $0["name"]?.stringValue } == ["listener", "database"])
            #expect(health["checks"]?.arrayValue?.first?["detail"] == "accepting connections on /nonexistent/unit.sock")
            _ = await served.end()
        }
    }

    @Test("info merges the service's own keys, persistence key by key")
    func info() async throws {
        let served = try ServedConnection { $0.maxConnections = 12; $0.maxBufferedBytes = 99_999 }
        try served.client.hello()
        let info = try #require(try served.client.call(#"{"id":2,"op":"info"}"#)["result"])
        #expect(info["service"] == "test-service")
        #expect(info["pid"] == .int(Int(getpid())))
        #expect(info["persistence"] == ["mode": "inMemory", "files": ["test.sqlite"]])
        #expect(info["extra"] == 42)
        #expect(info["connections"]?["limit"] == 12)
        #expect(info["bufferedBytes"] == ["unfinishedFrames": 0, "limit": 99_999])
        #expect(info["topics"] == ["service", "progress", "things"])
        #expect(info["protocol"] == ["name": "meowcare-wire", "minVersion": 1, "maxVersion": 1])
        _ = await served.end()
    }

    @Test("subscribe takes known topics only (naming the first unknown one and changing nothing); unsubscribe drops them")
    func subscriptions() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        let refused = try served.client.call(#"{"id":2,"op":"subscribe","params":{"topics":["things","bogus","worse"]}}"#)
        #expect(refused["error"]?["code"] == "invalidField")
        #expect(refused["error"]?["details"]?["field"] == "params.topics[1]")
        #expect(refused["error"]?["details"]?["topics"] == ["service", "progress", "things"])
        #expect(refused["error"]?["message"] == "Unknown topic 'bogus'. Topics: service, progress, things.")
        #expect(served.handle.topics.isEmpty)
        let subscribed = try served.client.call(#"{"id":3,"op":"subscribe","params":{"topics":["things","service"]}}"#)
        #expect(subscribed["result"] == ["topics": ["service", "things"]])
        let left = try served.client.call(#"{"id":4,"op":"unsubscribe","params":{"topics":["service"]}}"#)
        #expect(left["result"] == ["topics": ["things"]])
        #expect(served.handle.topics == ["things"])
        _ = await served.end()
    }
}
