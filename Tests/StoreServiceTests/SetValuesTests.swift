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
        let connection = try RawConnection(path: store.socket)
        try connection.hello()
        return try await offThread { () -> Result<JSONValue, any Error> in
            Result {
                connection.send(["id": 1, "op": "context.open", "params": [:]])
                let context = try connection.nextMessage()["result"]?["context"]?.stringValue ?? ""
                connection.send(json: #"{"id":2,"op":"object.insert","params":{"context":"\#(context)","entity":"CareEvent","values":{"id":"e","value":1}}}"#)
                let objectID = try connection.nextMessage()["result"]?["objectID"]?.stringValue ?? ""
                connection.send(json: #"{"id":3,"op":"object.set","params":{"context":"\#(context)","objectID":"\#(objectID)","values":\#(values)}}"#)
                return try connection.nextMessage()
            }
        }.get()
    }

    @Test("Of several refused values, object.set's error names the first one sent", arguments: [
        #"{"value":"x","eventTypeRaw":"nope","occurredAt":"yesterday","note":7,"updatedAt":false,"id":[]}"#,
        #"{"occurredAt":"yesterday","note":7,"id":[],"value":"x","updatedAt":false,"eventTypeRaw":"nope"}"#,
        #"{"note":7,"updatedAt":false,"value":"x","id":[],"eventTypeRaw":"nope","occurredAt":"yesterday"}"#,
        #"{"id":[],"occurredAt":"yesterday","eventTypeRaw":"nope","updatedAt":false,"note":7,"value":"x"}"#,
    ])
    func firstRefusedValueNamed(values: String) async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        let first = try #require(try JSONDecoder().decode([String: JSONValue].self, from: Data(values.utf8)).keys.min {
            values.range(of: "\"\($0)\"")!.lowerBound < values.range(of: "\"\($1)\"")!.lowerBound
        })
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
