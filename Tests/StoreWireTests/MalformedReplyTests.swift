import MeowWire
import StoreWire
import Testing

/// A reply that does not read as its type is an error that names the field path.
@Suite("StoreWire malformed replies")
struct MalformedReplyTests {
    func failure<T: Decodable>(_ type: T.Type, _ result: JSONValue, op: String) -> WireError? {
        do throws(WireError) {
            _ = try StoreReply.read(type, from: result, op: op)
            return nil
        } catch {
            return error
        }
    }

    @Test("an unknown routing reason names result.inserted[0].reason")
    func unknownEnumValue() throws {
        let reply: JSONValue = ["inserted": [["temporaryID": "t1", "objectID": "p1", "store": "Private", "reason": "guessed"]],
                                "insertedCount": 1, "updatedCount": 0, "deletedCount": 0, "merged": [], "transactions": []]
        let error = try #require(failure(SaveResult.self, reply, op: "context.save"))
        #expect(error.details["field"] == "result.inserted[0].reason")
        #expect(error.details["op"] == "context.save")
        #expect(error.message.contains("result.inserted[0].reason"))
    }

    @Test("an unknown merge policy names the field and the policies there are")
    func unknownMergePolicy() throws {
        let error = try #require(failure(ContextOpenResult.self, ["context": "c1", "author": "app", "mergePolicy": "lastWriterWins"], op: "context.open"))
        #expect(error.details["field"] == "result.mergePolicy")
        #expect(error.message.contains("mergeByPropertyObjectTrump"))
    }

    @Test("a missing key names its path")
    func missingKey() throws {
        let reply: JSONValue = ["transactions": [["store": "Private", "storeUUID": "S", "token": 1, "timestamp": "t", "author": "app",
                                                  "changes": [["kind": "insert", "objectID": "p1", "entity": "CareEvent"]]]],
                                "lastTokens": ["Private": 1]]
        let error = try #require(failure(HistoryResult.self, reply, op: "history.fetch"))
        #expect(error.details["field"] == "result.transactions[0].changes[0].uuid")
        #expect(error.message.contains("is missing"))
    }

    @Test("a value of the wrong type names its path")
    func wrongType() throws {
        let reply: JSONValue = ["objectID": "p1", "entity": "CareEvent", "store": "Private", "version": "three", "uuid": "u1",
                                "zone": nil, "values": [:]]
        let error = try #require(failure(ManagedObject.self, reply, op: "object.get"))
        #expect(error.details["field"] == "result.version")
        let stores: JSONValue = ["stores": [["name": "Private", "scope": "public", "url": "u", "storeUUID": "S", "entities": [], "lastHistoryToken": 0]],
                                 "routing": "deterministic"]
        #expect(failure(StoreListResult.self, stores, op: "store.list")?.details["field"] == "result.stores[0].scope")
        #expect(failure(CountResult.self, ["count": nil], op: "fetch.count")?.details["field"] == "result.count")
        #expect(failure(CountResult.self, [1, 2], op: "fetch.count")?.details["field"] == "result")
    }
}
