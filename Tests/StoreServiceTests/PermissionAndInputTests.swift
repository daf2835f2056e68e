import Foundation
import MeowWire
import Testing
import TestSupport

@Suite("Permissions and bad input over the socket")
struct PermissionAndInputTests {
    @Test func readOnlyShareRefusesInsertsUpdatesAndDeletesAndWritesNothing() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let temporarySession = try await client.insertSession(context, id: "shared-s", store: "Shared")
        let temporaryEvent = try await client.insertEvent(context, id: "shared-e", extra: ["session": .string(temporarySession)])
        let saved = try await client.save(context)
        let session = try StoreClient.permanentID(saved, temporarySession)
        let event = try StoreClient.permanentID(saved, temporaryEvent)
        try await client.call("share.setMetadata", ["zoneName": "com.apple.coredata.cloudkit.share.Z1", "ownerName": "owner",
                                                    "permission": "readOnly", "objectIDs": [.string(session), .string(event)]])

        let checked = try await client.call("permission.check", ["objectIDs": [.string(session)]])
        #expect(checked["canModifyManagedObjects"]?["Private"] == true)
        #expect(checked["canModifyManagedObjects"]?["Shared"] == false)
        #expect(checked["objects"]?[0]?["canUpdateRecord"] == false)

        // A new object in the read-only share: Apple's check says yes for a temporary ID; the save says no.
        let newcomer = try await client.insertEvent(context, id: "sneaky", extra: ["session": .string(session)])
        let temporaryCheck = try await client.call("permission.check", ["context": .string(context), "objectIDs": [.string(newcomer)]])
        #expect(temporaryCheck["objects"]?[0]?["canUpdateRecord"] == true)
        let insertError = try await client.failure("context.save", ["context": .string(context)])
        #expect(insertError.code == .permissionFailure)
        #expect(insertError.details["permission"] == "readOnly")
        #expect(try await client.count("CareEvent", stores: ["Shared"]) == 1)
        try await client.call("context.rollback", ["context": .string(context)])

        try await client.call("object.set", ["context": .string(context), "objectID": .string(event), "values": ["note": "edit"]])
        #expect(try await client.failure("context.save", ["context": .string(context)]).code == .permissionFailure)
        try await client.call("context.rollback", ["context": .string(context)])
        try await client.call("object.delete", ["context": .string(context), "objectID": .string(event)])
        #expect(try await client.failure("context.save", ["context": .string(context)]).code == .permissionFailure)
        try await client.call("context.rollback", ["context": .string(context)])
        #expect(try await client.get(event)["values"]?["note"] == .null)

        // Another owner's zone of the same name is another zone: its permission changes nothing here.
        try await client.call("share.setMetadata", ["zoneName": "com.apple.coredata.cloudkit.share.Z1", "ownerName": "mallory", "permission": "readWrite"])
        try await client.call("object.set", ["context": .string(context), "objectID": .string(event), "values": ["note": "edit"]])
        #expect(try await client.failure("context.save", ["context": .string(context)]).code == "permissionFailure")
        try await client.call("context.rollback", ["context": .string(context)])

        // Read-write: the same edit goes through.
        try await client.call("share.setMetadata", ["zoneName": "com.apple.coredata.cloudkit.share.Z1", "ownerName": "owner", "permission": "readWrite"])
        try await client.call("object.set", ["context": .string(context), "objectID": .string(event), "values": ["note": "edit"]])
        _ = try await client.save(context)
        #expect(try await client.get(event)["values"]?["note"] == "edit")
        client.close()
        _ = await store.stop()
    }

    @Test func badInputGetsAClearErrorAndTheServiceKeepsWorking() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let c = JSONValue.string(context)

        #expect(try await client.failure("object.insert", ["context": c, "entity": "Dog"]).code == .unknownEntity)
        #expect(try await client.failure("object.insert", ["context": c, "entity": "CareEvent", "values": ["colour": "red"]]).code == .unknownAttribute)
        let wrongType = try await client.failure("object.insert", ["context": c, "entity": "CareEvent", "values": ["value": "high"]])
        #expect(wrongType.code == .validationInvalidValue)
        #expect(wrongType.details["coreDataCode"] == 1550)
        let badEnum = try await client.failure("object.insert", ["context": c, "entity": "CareEvent", "values": ["eventTypeRaw": "nap"]])
        #expect(badEnum.details["coreDataCode"] == 1680)
        #expect(try await client.failure("object.insert", ["context": c, "entity": "CareEvent", "values": ["occurredAt": "soon"]]).code == .validationInvalidValue)
        #expect(try await client.failure("object.get", ["objectID": "x-coredata://NOPE/CareEvent/p1"]).code == .unknownObject)
        #expect(try await client.failure("object.get", ["objectID": "not an id"]).code == .invalidField)
        #expect(try await client.failure("context.save", ["context": "c999"]).code == .unknownContext)
        let policy = try await client.failure("context.open", ["mergePolicy": "lastWriterWins"])
        #expect(policy.code == .invalidField)
        #expect(policy.message.contains("mergeByPropertyObjectTrump"))
        #expect(try await client.failure("fetch", ["entity": "CareEvent", "predicate": "value >"]).code == .invalidPredicate)
        #expect(try await client.failure("fetch", ["entity": "CareEvent", "predicate": "colour == 1"]).code == .unknownAttribute)
        #expect(try await client.failure("fetch", ["entity": "CareEvent", "stores": ["Cloud"]]).code == .unknownStore)
        let sorts = try await client.failure("fetch", ["entity": "CareEvent", "sortDescriptors": .array(Array(repeating: ["key": "value"], count: 3000))])
        #expect(sorts.code == .invalidField)
        #expect(sorts.message.contains("at most 64"))
        // A uuid is the cloud record name: CKRecord.ID's rules (ASCII, 255 at most, no leading '_').
        for uuid in ["", "_private", "café", String(repeating: "u", count: 256)] {
            let refused = try await client.failure("object.insert", ["context": c, "entity": "CareEvent", "uuid": .string(uuid)])
            #expect(refused.code == .invalidField, "uuid \(uuid.prefix(20))")
            #expect(refused.message.contains("1 to 255 ASCII characters"), "\(refused.message)")
        }

        // A batch with one bad object inserts none of them.
        let batch = try await client.failure("object.insert", ["context": c, "objects": [
            ["entity": "CareEvent", "values": ["id": "ok"]], ["entity": "CareEvent", "values": ["value": true]]]])
        #expect(batch.details["index"] == 1)
        #expect(try await client.call("context.rollback", ["context": c])["registeredObjects"] == 0)

        let sessionsBefore = try await client.count("CareSession")
        // Missing required values fail at save with Core Data's codes; nothing is written. (A
        // required attribute has a default, as CloudKit mirroring requires; set to nil it fails.)
        _ = try await client.call("object.insert", ["context": c, "entity": "CareSession", "values": ["id": "x", "title": nil]])
        let missing = try await client.failure("context.save", ["context": c])
        #expect(missing.code == .validationMissingMandatoryProperty)
        #expect(missing.details["coreDataCode"] == 1570)
        #expect(missing.details["property"] == "title")
        _ = try await client.call("object.insert", ["context": c, "entity": "CareSession", "values": ["title": nil, "isDefault": nil]])
        let several = try await client.failure("context.save", ["context": c])
        #expect(several.code == .validationMultipleErrors)
        #expect(several.details["coreDataCode"] == 1560)
        #expect(try await client.count("CareEvent") == 0)
        #expect(try await client.count("CareSession") == sessionsBefore)

        #expect(try await client.call("ping")["pong"] == true)
        client.close()
        _ = await store.stop()
    }

    @Test func fetchSortsAndPagesAcrossBothStores() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        // Interleaved times across the stores: minutes 0..9, even in Private, odd in Shared.
        var objects: [JSONValue] = []
        for minute in 0..<10 {
            let time = JSONValue.string("2026-07-27T08:0\(minute):00Z")
            objects.append(["entity": "CareEvent", "store": minute % 2 == 0 ? "Private" : "Shared", "values": [
                "id": .string("m\(minute)"), "eventTypeRaw": "water", "occurredAt": time, "updatedAt": time, "value": .int(minute)]])
        }
        try await client.call("object.insert", ["context": .string(context), "objects": .array(objects)])
        _ = try await client.save(context)

        let page = try await client.call("fetch", ["entity": "CareEvent", "sortDescriptors": [["key": "occurredAt", "ascending": false]],
                                                   "limit": 3, "offset": 2])
        #expect(page["objects"]?.arrayValue?.map { $0["values"]?["id"] } == ["m7", "m6", "m5"])
        #expect(page["objects"]?.arrayValue?.map { $0["store"] } == ["Shared", "Private", "Shared"])
        let rows = try await client.call("fetch", ["entity": "CareEvent", "sortDescriptors": [["key": "occurredAt", "ascending": false]],
                                                   "limit": 3, "offset": 2, "resultFormat": "rows"])
        let columns = try #require(rows["columns"]?.arrayValue)
        #expect(Array(columns.prefix(6)) == ["objectID", "store", "version", "uuid", "zone", "id"])
        let idColumn = try #require(columns.firstIndex(of: "id"))
        let valueColumn = try #require(columns.firstIndex(of: "value"))
        #expect(rows["rows"]?.arrayValue?.map { $0[idColumn] } == ["m7", "m6", "m5"])
        #expect(rows["rows"]?[0]?[valueColumn]?.doubleValue == 7)
        #expect(rows["rows"]?[0]?[0] == page["objects"]?[0]?["objectID"])
        let unsorted = try await client.call("fetch", ["entity": "CareEvent", "limit": 4, "offset": 3])
        #expect(unsorted["objects"]?.arrayValue?.map { $0["values"]?["id"] } == ["m6", "m8", "m1", "m3"])
        #expect(try await client.count("CareEvent", predicate: "value >= 5 AND value < 8") == 3)
        #expect(try await client.count("CareEvent", predicate: "value IN {1, 2, 3} OR id BEGINSWITH 'm9'", stores: ["Shared"]) == 3)
        #expect(try await client.count("CareEvent", predicate: "occurredAt > '2026-07-27T08:05:00Z'") == 4)
        client.close()
        _ = await store.stop()
    }

    @Test func acknowledgedSaveSurvivesKillDashNine() async throws {
        let directory = TemporaryDirectory()
        let first = try await StoreFixture.start(onDisk: true, ["--no-orphan-repair"], directory: directory)
        var client = try await first.client()
        let context = try await client.openContext()
        var objects: [JSONValue] = []
        for index in 0..<50 {
            objects.append(["entity": "CareEvent", "values": ["id": .string("k\(index)"), "eventTypeRaw": "insulin",
                                                              "occurredAt": "2026-07-27T08:00:00Z", "updatedAt": "2026-07-27T08:00:00Z"]])
        }
        try await client.call("object.insert", ["context": .string(context), "objects": .array(objects)])
        let saved = try await client.call("context.save", ["context": .string(context), "report": "grouped"])
        #expect(StoreClient.insertions(saved).count == 50)
        #expect(saved["insertedCount"] == 50)
        #expect(saved["insertedGroups"]?.arrayValue?.count == 1)
        #expect(saved["insertedGroups"]?[0]?["store"] == "Private")
        #expect(saved["inserted"] == nil)
        // A summary answers counts only.
        let more = try await client.call("object.insert", ["context": .string(context), "objects": .array(Array(objects.prefix(1))), "returnObjectIDs": false])
        #expect(more == ["insertedCount": 1])
        let summary = try await client.call("context.save", ["context": .string(context), "report": "summary"])
        #expect(summary["insertedCount"] == 1)
        #expect(summary["inserted"] == nil && summary["insertedGroups"] == nil && summary["updated"] == nil)
        first.process.kill()
        client.close()

        let second = try await StoreFixture.start(onDisk: true, ["--no-orphan-repair"], directory: directory)
        client = try await second.client()
        #expect(try await client.count("CareEvent") == 51)
        let history = try await client.call("history.fetch", ["store": "Private"])
        #expect(history["transactions"]?.arrayValue?.count == 2)
        client.close()
        #expect(await second.stop() == 0)
    }

    /// A reply over the frame limit would make the client close the connection; the request
    /// fails with limitExceeded instead and the connection keeps serving.
    @Test func aReplyOverTheFrameLimitIsLimitExceededAndTheConnectionGoesOn() async throws {
        let fixture = try await StoreFixture.start(["--max-frame-bytes", "8192"])
        let client = try await fixture.client()
        for batch in 0..<6 {
            let context = try await client.openContext()
            for index in 0..<10 { _ = try await client.insertEvent(context, id: "e\(batch)-\(index)") }
            _ = try await client.save(context)
        }
        let error = try await client.failure("fetch", ["entity": "CareEvent"])
        #expect(error.code == "limitExceeded")
        #expect(error.details["maxFrameBytes"] == 8192)
        #expect(error.details["ckErrorCode"] == 27)
        #expect((error.details["replyBytes"]?.intValue ?? 0) > 8192)
        let page = try await client.call("fetch", ["entity": "CareEvent", "limit": 5])
        #expect(page["objects"]?.arrayValue?.count == 5)
        client.wire.close()
        _ = await fixture.stop()
    }
}
