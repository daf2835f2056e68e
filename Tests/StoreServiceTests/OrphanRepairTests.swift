import Foundation
import MeowWire
import Testing
import TestSupport

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
