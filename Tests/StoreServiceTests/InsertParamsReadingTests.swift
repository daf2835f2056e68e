import Foundation
import MeowWire
import Testing
import TestSupport

/// object.insert's params are read straight from the request's bytes: every value kind arrives
/// as sent, and a malformed member is refused naming its field, with the code a decoder gives.
@Suite("object.insert params read from the request")
struct InsertParamsReadingTests {
    @Test("Values of every JSON kind arrive as sent, in one object and in a batch")
    func valuesArriveAsSent() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let c = JSONValue.string(context)
        let id = "quote \" backslash \\ tab \t cat 🐈"
        let single = try await client.call("object.insert", ["context": c, "entity": "CareEvent", "unknownMember": ["ignored": [1, 2]],
                                                             "values": ["id": .string(id), "value": -12.5, "note": .null, "session": .null,
                                                                        "eventTypeRaw": "bloodGlucose", "occurredAt": "2026-07-27T11:30:00.250+02:00"]])
        let objectID = try #require(single["objectID"]?.stringValue)
        let read = try await client.call("object.get", ["context": c, "objectID": .string(objectID)])
        #expect(read["values"]?["id"] == .string(id))
        #expect(read["values"]?["value"] == .double(-12.5))
        #expect(read["values"]?["note"] == .null)
        #expect(read["values"]?["occurredAt"] == "2026-07-27T09:30:00.250Z")

        let batch = try await client.call("object.insert", ["context": c, "returnObjectIDs": false, "objects": [
            ["entity": "CareEvent", "values": ["id": "b1", "value": 7]],
            ["entity": "CareSession", "values": ["id": "s1", "isDefault": true]],
        ]])
        #expect(batch["insertedCount"] == 2)
        let saved = try await client.call("context.save", ["context": c])
        #expect(saved["insertedCount"] == 3)
        let sessions = try await client.call("fetch", ["entity": "CareSession", "predicate": "id == 's1'"])
        #expect(sessions["objects"]?[0]?["values"]?["isDefault"] == true)
        client.close()
        _ = await store.stop()
    }

    @Test("A malformed member is refused with its field named, and nothing is inserted")
    func malformedMembersNamed() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let c = JSONValue.string(context)
        let cases: [(params: JSONValue, code: ErrorCode, field: String)] = [
            (["entity": "CareEvent"], .missingField, "params.context"),
            (["context": .null, "entity": "CareEvent"], .missingField, "params.context"),
            (["context": c, "entity": "CareEvent", "values": "high"], .invalidField, "params.values"),
            (["context": c, "entity": "CareEvent", "returnObjectIDs": "yes"], .invalidField, "params.returnObjectIDs"),
            (["context": c, "objects": [["entity": "CareEvent"], ["values": ["id": "x"]]]], .missingField, "params.objects[1].entity"),
            (["context": c, "objects": [["entity": "CareEvent", "values": [1, 2]]]], .invalidField, "params.objects[0].values"),
            (["context": c, "objects": [["entity": 5]]], .invalidField, "params.objects[0].entity"),
            (["context": c, "objects": "CareEvent"], .invalidField, "params.objects"),
        ]
        for (params, code, field) in cases {
            let refused = try await client.failure("object.insert", params)
            #expect(refused.code == code, "\(params)")
            #expect(refused.details["field"] == .string(field), "\(params): \(refused.message)")
        }
        #expect(try await client.call("context.rollback", ["context": c])["registeredObjects"] == 0)
        client.close()
        _ = await store.stop()
    }
}
