import Foundation
import MeowWire
import Testing
import TestSupport

/// How object.set reads an object's values: in the order sent, as object.insert does.
@Suite("object.set values")
struct SetValuesTests {
    /// Inserts a valid CareEvent, then sends `values` (JSON text, so that a key can be repeated)
    /// as its object.set on a raw connection, and returns the set's reply.
    static func set(_ store: StoreFixture, _ values: String) async throws -> JSONValue {
        try await InsertValuesTests.inContext(store) { connection, context in
            connection.send(json: #"{"id":2,"op":"object.insert","params":{"context":"\#(context)","entity":"CareEvent","values":{"id":"e","value":1}}}"#)
            let objectID = try connection.nextMessage()["result"]?["objectID"]?.stringValue ?? ""
            connection.send(json: #"{"id":3,"op":"object.set","params":{"context":"\#(context)","objectID":"\#(objectID)","values":\#(values)}}"#)
            return try connection.nextMessage()
        }
    }

    @Test("Of several refused values, object.set's error names the first one sent", arguments: InsertValuesTests.severalRefused)
    func firstRefusedValueNamed(values: String) async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        let first = try InsertValuesTests.firstKey(values)
        let refused = try await Self.set(store, values)
        #expect(refused["ok"] == false)
        #expect(refused["error"]?["details"]?["property"] == .string(first), "\(refused)")
    }

    @Test("object.set: a key sent twice keeps its last value; values missing or not an object are refused")
    func repeatedKeyAndShape() async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        let kept = try await Self.set(store, #"{"note":"first","value":"not a number","value":5,"note":"second"}"#)
        #expect(kept["ok"] == true, "\(kept)")
        #expect(kept["result"]?["values"]?["value"]?.doubleValue == 5)
        #expect(kept["result"]?["values"]?["note"] == "second")

        let refused = try await Self.set(store, #"{"value":5,"value":"not a number"}"#)
        #expect(refused["ok"] == false)
        #expect(refused["error"]?["details"]?["property"] == "value", "\(refused)")

        for values in ["null", "[1]", #""text""#] {
            let reply = try await Self.set(store, values)
            #expect(reply["ok"] == false, "\(values)")
            #expect(reply["error"]?["details"]?["field"] == "params.values", "\(values): \(reply)")
        }
    }
}
