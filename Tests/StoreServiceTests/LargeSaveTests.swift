import Foundation
import MeowWire
import Testing
import TestSupport

/// A save of many new objects has its rows stepped by a second thread while the writer prepares
/// the next ones (`RowStepper`). These pin that such a save keeps every rule a small save keeps:
/// a refused row names its object and nothing is written, a destination checked mid-save is
/// checked against the store, rows of two stores land in their stores, and the next save works.
@Suite("Large saves")
struct LargeSaveTests {
    /// Well past the size from which rows are handed to the second thread.
    static let count = 200

    static func event(_ n: Int, uuid: String? = nil, store: String? = nil, session: String? = nil) -> JSONValue {
        var values: [String: JSONValue] = ["id": .string("e\(n)"), "eventTypeRaw": "bloodGlucose", "value": .int(100 + n),
                                           "occurredAt": "2026-12-06T10:00:00Z", "note": "before breakfast"]
        if let session { values["session"] = .string(session) }
        var item: [String: JSONValue] = ["entity": "CareEvent", "values": .object(values)]
        if let uuid { item["uuid"] = .string(uuid) }
        if let store { item["store"] = .string(store) }
        return .object(item)
    }

    static func insert(_ client: StoreClient, _ context: String, _ objects: [JSONValue]) async throws -> [String] {
        let inserted = try await client.call("object.insert", ["context": .string(context), "objects": .array(objects)])
        return (inserted["objectIDs"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    static func transactionCount(_ client: StoreClient) async throws -> Int {
        try await client.call("history.fetch", ["store": "Private"])["transactions"]?.arrayValue?.count ?? -1
    }

    @Test("A uuid already stored, deep in a large save, is refused naming its object; nothing is written")
    func duplicateUUIDDeepInALargeSave() async throws {
        let store = try await StoreFixture.start(onDisk: true)
        let client = try await store.client()
        let first = try await client.openContext()
        _ = try await Self.insert(client, first, [Self.event(-1, uuid: "DUP-1")])
        _ = try await client.save(first)
        let transactions = try await Self.transactionCount(client)

        let context = try await client.openContext()
        let ids = try await Self.insert(client, context, (0..<Self.count).map { Self.event($0, uuid: $0 == 150 ? "DUP-1" : "E-\($0)") })
        #expect(ids.count == Self.count)
        let refused = try await client.failure("context.save", ["context": .string(context)])
        #expect(refused.code == "uniquenessConstraint")
        #expect(refused.details["coreDataCode"] == 133021)
        #expect(refused.details["objectID"] == .string(ids[150]))
        #expect(refused.details["uuid"] == "DUP-1")
        #expect(try await client.count("CareEvent") == 1)
        #expect(try await Self.transactionCount(client) == transactions)
        // The context is as before the save: its new objects still under their temporary IDs
        // (the table under permanent IDs built during the save is not adopted).
        for id in [ids[0], ids[150], ids[Self.count - 1]] {
            let object = try await client.get(id, context: context)
            #expect(object["objectID"] == .string(id))
            #expect(object["isInserted"] == true)
        }

        // The next large save is written whole (the refused one gave the second thread up).
        let next = try await client.openContext()
        _ = try await Self.insert(client, next, (0..<Self.count).map { Self.event($0, uuid: "N-\($0)") })
        let saved = try await client.save(next)
        #expect(saved["insertedCount"] == .int(Self.count))
        #expect(try await client.count("CareEvent") == Self.count + 1)
        #expect(try await client.count("CareEvent", predicate: "value == 299") == 1)
        #expect(try await Self.transactionCount(client) == transactions + 1)
        client.close()
        _ = await store.stop()
    }

    @Test("A destination deleted since it was read, named halfway through a large save, refuses the save")
    func deletedDestinationHalfwayThroughALargeSave() async throws {
        let store = try await StoreFixture.start(onDisk: true)
        let client = try await store.client()
        let setup = try await client.openContext()
        let temporary = try await client.insertSession(setup, id: "s")
        let session = try StoreClient.permanentID(try await client.save(setup), temporary)

        // The first half has no session, so its rows are in flight when the session is checked.
        let context = try await client.openContext()
        _ = try await Self.insert(client, context, (0..<Self.count).map { Self.event($0, session: $0 < Self.count / 2 ? nil : session) })
        let other = try await store.client("other")
        let deleting = try await other.openContext()
        try await other.call("object.delete", ["context": .string(deleting), "objectID": .string(session)])
        _ = try await other.save(deleting)

        let refused = try await client.failure("context.save", ["context": .string(context)])
        #expect(refused.code == .unknownObject)
        #expect(refused.details["objectID"] == .string(session))
        #expect(try await client.count("CareEvent") == 0)
        other.close()
        client.close()
        _ = await store.stop()
    }

    @Test("A large save's rows for two stores land in their stores, values as sent")
    func rowsOfTwoStoresInOneLargeSave() async throws {
        let store = try await StoreFixture.start(onDisk: true)
        let client = try await store.client()
        let context = try await client.openContext()
        _ = try await Self.insert(client, context, (0..<Self.count).map { Self.event($0, store: $0 % 2 == 0 ? "Private" : "Shared") })
        let saved = try await client.save(context)
        #expect(saved["insertedCount"] == .int(Self.count))
        #expect(try await client.count("CareEvent", stores: ["Private"]) == Self.count / 2)
        #expect(try await client.count("CareEvent", stores: ["Shared"]) == Self.count / 2)
        #expect(try await client.count("CareEvent", predicate: "value == 100", stores: ["Private"]) == 1)
        #expect(try await client.count("CareEvent", predicate: "value == 101", stores: ["Shared"]) == 1)
        client.close()
        _ = await store.stop()
    }

    @Test("After a large save, then a small one, the context holds each object once, new ones under their permanent IDs")
    func contextAfterLargeAndSmallSaves() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let setup = try await client.openContext()
        let setupSession = try await client.insertSession(setup, id: "s")
        let savedSession = try StoreClient.permanentID(try await client.save(setup), setupSession)

        // Held before the save: a saved session, read into the context and edited.
        let context = try await client.openContext()
        _ = try await client.call("object.set", ["context": .string(context), "objectID": .string(savedSession), "values": ["title": "edited"]])
        let newSession = try await client.insertSession(context, id: "n")
        let events = try await Self.insert(client, context, (0..<Self.count).map { Self.event($0, session: $0 % 2 == 0 ? savedSession : newSession) })
        let saved = try await client.save(context)
        #expect(saved["insertedCount"] == .int(Self.count + 1))
        #expect(saved["updatedCount"] == 1)
        let newSessionID = try StoreClient.permanentID(saved, newSession)
        // Each object registered once: the new ones under their permanent IDs only.
        #expect(try await client.call("context.rollback", ["context": .string(context)])["registeredObjects"] == .int(Self.count + 2))
        let gone = try await client.failure("object.get", ["context": .string(context), "objectID": .string(events[0])])
        #expect(gone.code == .unknownObject)

        // A small save in the same context: few new objects among many registered ones.
        let more = try await Self.insert(client, context, (0..<3).map { Self.event(1_000 + $0, session: newSessionID) })
        let second = try await client.save(context)
        #expect(second["insertedCount"] == 3)
        #expect(try await client.call("context.rollback", ["context": .string(context)])["registeredObjects"] == .int(Self.count + 5))

        for (temporary, session) in [(events[0], savedSession), (events[151], newSessionID), (more[2], newSessionID)] {
            let id = try StoreClient.permanentID(temporary == more[2] ? second : saved, temporary)
            let object = try await client.get(id, context: context)
            #expect(object["objectID"] == .string(id))
            #expect(object["isInserted"] == false)
            #expect(object["hasChanges"] == false)
            #expect(object["values"]?["session"] == .string(session))
        }
        #expect(try await client.get(savedSession, context: context)["values"]?["title"] == "edited")
        #expect(try await client.call("context.rollback", ["context": .string(context)])["registeredObjects"] == .int(Self.count + 5))
        client.close()
        _ = await store.stop()
    }

    @Test("Text and bytes stepped by the second thread are written exactly: NUL, non-ASCII, long and empty values, in saves one after another")
    func textAndBytesWrittenExactly() async throws {
        // The row stepper lends each value's bytes to SQLite rather than having it copy them; the
        // values must be read while they are alive, and a later row must not see an earlier one's.
        let (store, client) = try await AttributeTypeTests.start()
        defer { Task { _ = await store.stop() } }
        let long = String(repeating: "long text ", count: 1_000)
        func code(_ n: Int) -> String {
            switch n % 4 {
            case 0: "k\(n) nul \u{0} inside"
            case 1: "k\(n) ünïcödé 🐈"
            case 2: "k\(n) \(long)"
            default: "k\(n)"
            }
        }
        func blob(_ n: Int) -> String {
            switch n % 3 {
            case 0: ""
            case 1: Data((0..<(n % 251)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ n) }).base64EncodedString()
            default: Data(repeating: UInt8(n % 256), count: 20_000).base64EncodedString()
            }
        }
        for round in 0..<2 {
            let numbers = (round * Self.count)..<((round + 1) * Self.count)
            let context = try await client.openContext()
            let objects: [JSONValue] = numbers.map { n in
                .object(["entity": "Sample", "values": ["code": .string(code(n)), "blob": .string(blob(n)), "large": .int(n)]])
            }
            _ = try await Self.insert(client, context, objects)
            #expect(try await client.save(context)["insertedCount"] == .int(Self.count))
        }
        let fetched = try await client.call("fetch", ["entity": "Sample", "sortDescriptors": [["key": "large", "ascending": true]]])
        let objects = fetched["objects"]?.arrayValue ?? []
        #expect(objects.count == 2 * Self.count)
        for (n, object) in objects.enumerated() {
            #expect(object["values"]?["large"] == .int(n))
            #expect(object["values"]?["code"] == .string(code(n)), "object \(n)")
            #expect(object["values"]?["blob"] == .string(blob(n)), "object \(n)")
        }
    }
}
