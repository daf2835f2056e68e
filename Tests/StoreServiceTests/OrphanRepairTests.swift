import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

@Suite("Seed 000: orphan repair over the socket")
struct OrphanRepairTests {
    /// Scenario 3: a saved orphan is attached to the default session, no store reassignment.
    @Test func savedOrphanCareEventIsAttachedToDefaultSessionWithoutReassignment() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let temporary = try await client.insertEvent(context, id: "orphan-1")
        let event = try StoreClient.permanentID(try await client.save(context), temporary)
        #expect(try await client.get(event)["values"]?["session"] == .null)

        // The crashing code of seed 000 assigned every orphan; for a saved one that is refused.
        let crash = try await client.failure("object.assign", ["context": .string(context), "objectID": .string(event), "store": "Private"])
        #expect(crash.code == .invalidReassignment)
        #expect(crash.message == "Can't reassign an object to a different store once it has been saved.")

        // The fixed repair: ensure the default session, attach without assigning, save.
        let report = try await client.call("repair.orphans", ["context": .string(context)])
        #expect(report["attached"] == 1)
        #expect(report["assigned"] == [])
        #expect(report["sessionCreated"] == true)
        let sessionTemporary = try #require(report["session"]?.stringValue)
        let saved = try await client.save(context)
        let session = try StoreClient.permanentID(saved, sessionTemporary)
        #expect(saved["updated"] == [.string(event)])

        let attached = try await client.get(event)
        #expect(attached["values"]?["session"] == .string(session))
        #expect(attached["store"] == "Private")
        #expect(attached["objectID"] == .string(event))

        // Idempotent: a second run finds nothing to do.
        let again = try await client.call("repair.orphans", ["context": .string(context)])
        #expect(again["attached"] == 0)
        #expect(again["sessionCreated"] == false)
        #expect(again["session"] == .string(session))
        client.close()
        #expect(await store.stop() == 0)
    }

    /// Scenario 3: an unsaved orphan is assigned to the session's store first.
    @Test func unsavedOrphanIsAssignedToTheSessionsStoreFirst() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let temporary = try await client.insertEvent(context, id: "new-orphan")
        let report = try await client.call("repair.orphans", ["context": .string(context)])
        #expect(report["assigned"] == [.string(temporary)])
        #expect(report["attached"] == 1)
        let saved = try await client.save(context)
        let inserted = try StoreClient.insertion(saved, temporary)
        #expect(inserted.store == "Private")
        #expect(inserted.reason == "assigned")
        client.close()
        _ = await store.stop()
    }

    @Test func startUpRepairAttachesSavedOrphansAndLeavesSharedOnesReported() async throws {
        let directory = TemporaryDirectory()
        let first = try await StoreFixture.start(onDisk: true, ["--no-orphan-repair"], directory: directory)
        var client = try await first.client()
        let context = try await client.openContext()
        let privateOrphan = try await client.insertEvent(context, id: "p-orphan")
        let sharedOrphan = try await client.insertEvent(context, id: "s-orphan", store: "Shared")
        let saved = try await client.save(context)
        let privateID = try StoreClient.permanentID(saved, privateOrphan)
        let sharedID = try StoreClient.permanentID(saved, sharedOrphan)
        client.close()
        #expect(await first.stop() == 0)

        let second = try await StoreFixture.start(onDisk: true, directory: directory)
        client = try await second.client()
        let session = try await client.call("fetch", ["entity": "CareSession", "predicate": "isDefault == YES"])
        let sessionID = try #require(session["objects"]?[0]?["objectID"])
        #expect(try await client.get(privateID)["values"]?["session"] == sessionID)
        #expect(try await client.get(sharedID)["values"]?["session"] == .null)

        let report = try await client.call("repair.orphans")
        #expect(report["attached"] == 0)
        #expect(report["skippedCount"] == 1)
        #expect(report["skipped"]?[0]?["objectID"] == .string(sharedID))
        #expect(report["skipped"]?[0]?["reason"]?.stringValue?.hasPrefix("crossStore") == true)
        client.close()
        #expect(await second.stop() == 0)
    }

    /// The start-up repair on stores that opening found empty takes a shorter route; what it
    /// leaves must be what the repair op leaves on the same empty stores: the default session
    /// (same object ID, uuid and values), the same history transaction, the same report.
    @Test(arguments: [false, true])
    func startUpRepairOnNewStoresLeavesWhatTheRepairOpLeaves(onDisk: Bool) async throws {
        let atStart = try await StoreFixture.start(onDisk: onDisk)
        let byOp = try await StoreFixture.start(onDisk: onDisk, ["--no-orphan-repair"])
        let startLine = try #require(await atStart.process.waitForLine(containing: "\"msg\":\"orphan repair\""))
        let startClient = try await atStart.client()
        let opClient = try await byOp.client()
        #expect(try await opClient.call("fetch", ["entity": "CareSession"])["objects"] == [])
        let report = try await opClient.call("repair.orphans")
        // The two devices' stores have their own UUIDs, which object IDs hold: named by store instead.
        let started = try await Self.comparable(startClient), repaired = try await Self.comparable(opClient)

        let startFields = try JSONParser.parse(startLine)
        #expect(startFields["sessionCreated"] == true && report["sessionCreated"] == true)
        #expect(startFields["attached"] == 0 && report["attached"] == 0)
        #expect(startFields["skipped"] == 0 && report["skippedCount"] == 0)
        #expect(started(startFields["session"] ?? .null) == repaired(report["session"] ?? .null))
        let sessions = try await startClient.call("fetch", ["entity": "CareSession"])
        #expect(sessions["objects"]?.arrayValue?.count == 1)
        #expect(sessions["objects"]?[0]?["objectID"] == startFields["session"])
        #expect(started(sessions) == repaired(try await opClient.call("fetch", ["entity": "CareSession"])))
        for store in ["Private", "Shared"] {
            let history = try await startClient.call("history.fetch", ["store": .string(store)])
            #expect(history["transactions"]?.arrayValue?.count == (store == "Private" ? 1 : 0))
            #expect(started(history) == repaired(try await opClient.call("history.fetch", ["store": .string(store)])))
        }
        startClient.close()
        opClient.close()
        #expect(await atStart.stop() == 0)
        #expect(await byOp.stop() == 0)
    }

    /// A new private store beside a shared store with an orphan in it: the start-up repair still
    /// reports the shared orphan (the shorter route is for stores that are all new).
    @Test func startUpRepairWithOnlyTheSharedStoreKeptReportsItsOrphan() async throws {
        let directory = TemporaryDirectory()
        let first = try await StoreFixture.start(onDisk: true, ["--no-orphan-repair"], directory: directory)
        let client = try await first.client()
        let context = try await client.openContext()
        let sharedOrphan = try await client.insertEvent(context, id: "s-orphan", store: "Shared")
        let sharedID = try StoreClient.permanentID(try await client.save(context), sharedOrphan)
        client.close()
        #expect(await first.stop() == 0)
        let data = try #require(first.dataDirectory)
        for name in try FileManager.default.contentsOfDirectory(atPath: data) where name.contains("-Private.sqlite") {
            try FileManager.default.removeItem(atPath: "\(data)/\(name)")
        }

        let second = try await StoreFixture.start(onDisk: true, directory: directory)
        let line = try JSONParser.parse(try #require(await second.process.waitForLine(containing: "\"msg\":\"orphan repair\"")))
        #expect(line["sessionCreated"] == true)
        #expect(line["skipped"] == 1)
        let reopened = try await second.client()
        #expect(try await reopened.get(sharedID)["values"]?["session"] == .null)
        reopened.close()
        #expect(await second.stop() == 0)
    }

    /// The model's `orphanRepair.defaultValues`: an object gives the default session its values;
    /// anything else stops the start naming the field, as the dictionary's decoding always did.
    @Test func theRulesDefaultValuesComeFromTheModelAndANonObjectIsRefused() async throws {
        let directory = TemporaryDirectory()
        let printed = try await MeowProcess.run("store-service", ["--print-model"], timeout: .seconds(20))
        guard case var .object(model) = try JSONParser.parse(printed.stdout), case var .object(rule)? = model["orphanRepair"] else {
            throw TestFailure("--print-model gave no orphanRepair rule: \(printed.stdout.prefix(200))")
        }
        rule["defaultValues"] = ["title": "Everyday"]
        model["orphanRepair"] = .object(rule)
        let store = try await StoreFixture.start(model: .object(model), directory: directory)
        let client = try await store.client()
        let sessions = try await client.call("fetch", ["entity": "CareSession", "predicate": "isDefault == YES"])
        #expect(sessions["objects"]?[0]?["values"]?["title"] == "Everyday")
        client.close()
        #expect(await store.stop() == 0)

        rule["defaultValues"] = 3
        model["orphanRepair"] = .object(rule)
        let path = directory.file("bad.json")
        try JSONWriter.text(.object(model)).write(toFile: path, atomically: true, encoding: .utf8)
        let refused = try await MeowProcess.run("store-service", ["--socket", directory.file("b.sock"), "--in-memory", "--model", path], timeout: .seconds(20))
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("orphanRepair.defaultValues: Expected to decode Dictionary<String, JSONValue> but found a number instead."),
                "\(refused.stderr)")
    }

    /// A device's answers made comparable with another device's: each store UUID (a device's
    /// own, and part of its object IDs) replaced by its store's name, and no commit times.
    private static func comparable(_ client: StoreClient) async throws -> @Sendable (JSONValue) -> JSONValue {
        let stores = try await client.call("store.list")["stores"]?.arrayValue ?? []
        let names = stores.compactMap { store -> (String, String)? in
            guard let uuid = store["storeUUID"]?.stringValue, let name = store["name"]?.stringValue else { return nil }
            return (uuid, "<\(name)>")
        }
        #expect(names.count == 2)
        @Sendable func replace(_ value: JSONValue) -> JSONValue {
            switch value {
            case let .string(text): return .string(names.reduce(text) { $0.replacingOccurrences(of: $1.0, with: $1.1) })
            case let .array(items): return .array(items.map(replace))
            case let .object(fields): return .object(fields.filter { $0.key != "timestamp" }.mapValues(replace))
            default: return value
            }
        }
        return replace
    }
}

@Suite("Seed 000: a bulk orphan repair's history")
struct BulkOrphanRepairTests {
    /// Past 256 orphans a file store's repair reads the rows it changes on a second connection
    /// beside its UPDATE; in memory (and below that count) the UPDATE returns them. Either way
    /// history has one update per attached orphan, in key order, naming its uuid.
    @Test("A bulk repair's history names every orphan it attached, in key order, with its uuid", arguments: [false, true])
    func bulkRepairHistory(onDisk: Bool) async throws {
        let store = try await StoreFixture.start(onDisk: onDisk, ["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let session = try await client.insertSession(context, id: "kept")
        var objects: [JSONValue] = []
        for index in 0..<330 {
            var values: [String: JSONValue] = ["id": .string("e\(index)"), "eventTypeRaw": "note",
                                               "occurredAt": "2026-07-27T09:00:00Z", "updatedAt": "2026-07-27T09:00:00Z"]
            // Every eleventh event has its session: not an orphan.
            if index % 11 == 0 { values["session"] = .string(session) }
            objects.append(["entity": "CareEvent", "uuid": .string("event-\(index)"), "values": .object(values)])
        }
        try await client.call("object.insert", ["context": .string(context), "objects": .array(objects)])
        let saved = try await client.save(context)
        let token = try #require(saved["transactions"]?[0]?["token"]?.intValue)

        let report = try await client.call("repair.orphans")
        #expect(report["attached"] == 300)
        let history = try await client.call("history.fetch", ["store": "Private", "afterToken": .int(token)])
        let transaction = try #require(history["transactions"]?[0])
        #expect(transaction["contextName"] == "orphanRepair")
        let updates = try #require(transaction["changes"]?.arrayValue).filter { $0["kind"] == "update" }
        #expect(updates.count == 300)
        #expect(updates.allSatisfy { $0["entity"] == "CareEvent" && $0["changedProperties"] == ["session"] })
        let keys = updates.compactMap { $0["objectID"]?.stringValue?.split(separator: "/").last.flatMap { Int($0.dropFirst()) } }
        #expect(keys.count == 300 && keys == keys.sorted())
        let orphanUUIDs = (0..<330).filter { $0 % 11 != 0 }.map { "event-\($0)" }
        #expect(updates.compactMap { $0["uuid"]?.stringValue } == orphanUUIDs)
        let left = try await client.call("fetch.count", ["entity": "CareEvent", "predicate": "session == nil"])
        #expect(left["count"] == 0)
        client.close()
        #expect(await store.stop() == 0)
    }
}

extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        guard case let .array(items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
