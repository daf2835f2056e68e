import Foundation
import MeowWire
import Testing
import TestSupport

/// How object.insert reads and converts an object's values: in the order sent, a repeated key's
/// last value standing, and the richer types' text forms (base64, UUIDs, URIs) checked as
/// Foundation checks them.
@Suite("object.insert values")
struct InsertValuesTests {
    /// Sends `params` (JSON text, so that a key can be repeated) as an object.insert on a raw
    /// connection with an open context, and returns the reply.
    static func insert(_ store: StoreFixture, _ values: String) async throws -> JSONValue {
        try await inContext(store) { connection, context in
            connection.send(json: #"{"id":2,"op":"object.insert","params":{"context":"\#(context)","objects":[{"entity":"CareEvent","values":\#(values)}]}}"#)
            let inserted = try connection.nextMessage()
            guard inserted["ok"] == true else { return inserted }
            let objectID = inserted["result"]?["objectIDs"]?[0] ?? .null
            connection.send(["id": 3, "op": "object.get", "params": ["context": .string(context), "objectID": objectID]])
            return try connection.nextMessage()
        }
    }

    /// Runs `body` off the test's thread with a raw connection to `store` and a context opened on it.
    static func inContext(_ store: StoreFixture, _ body: @escaping @Sendable (RawConnection, String) throws -> JSONValue) async throws -> JSONValue {
        let connection = try RawConnection(path: store.socket)
        try connection.hello()
        return try await offThread { () -> Result<JSONValue, any Error> in
            Result {
                connection.send(["id": 1, "op": "context.open", "params": [:]])
                return try body(connection, try connection.nextMessage()["result"]?["context"]?.stringValue ?? "")
            }
        }.get()
    }

    @Test("A key sent twice keeps its last value, as a JSON object's last member stands")
    func repeatedKeyLastStands() async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        let kept = try await Self.insert(store, #"{"id":"first","value":"not a number","note":"n","value":5,"id":"second"}"#)
        #expect(kept["ok"] == true, "\(kept)")
        #expect(kept["result"]?["values"]?["value"]?.doubleValue == 5)
        #expect(kept["result"]?["values"]?["id"] == "second")
        #expect(kept["result"]?["values"]?["note"] == "n")

        let refused = try await Self.insert(store, #"{"value":5,"value":"not a number"}"#)
        #expect(refused["ok"] == false)
        #expect(refused["error"]?["details"]?["property"] == "value", "\(refused)")
    }

    @Test("In a batch, a key sent twice keeps its last value in its first place, whatever the objects before it sent",
          arguments: [
              // The same keys as the object before, then one of them again.
              [#"{"id":"a","value":1,"note":"n"}"#, #"{"id":"b","value":2,"note":"m","value":3}"#],
              // A different first key, then the keys the object before had at those places.
              [#"{"value":1,"note":"n","id":"a"}"#, #"{"id":[],"note":"m","id":"b","value":3}"#],
              // The object before repeated a key itself.
              [#"{"id":"a","value":1,"id":"a2"}"#, #"{"id":"b","value":2,"note":"m","id":"b2","value":3}"#],
          ])
    func repeatedKeyInBatch(values: [String]) async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        let last = try await Self.inContext(store) { connection, context in
            let batch = values.map { #"{"entity":"CareEvent","values":\#($0)}"# }.joined(separator: ",")
            connection.send(json: #"{"id":2,"op":"object.insert","params":{"context":"\#(context)","objects":[\#(batch)]}}"#)
            let inserted = try connection.nextMessage()
            guard inserted["ok"] == true else { return inserted }
            connection.send(["id": 3, "op": "object.get", "params": ["context": .string(context), "objectID": inserted["result"]?["objectIDs"]?[1] ?? .null]])
            return try connection.nextMessage()
        }
        #expect(last["ok"] == true, "\(last)")
        #expect(last["result"]?["values"]?["value"]?.doubleValue == 3, "\(last)")
        #expect(last["result"]?["values"]?["id"]?.stringValue?.hasPrefix("b") == true, "\(last)")
    }

    /// Six refused values of a CareEvent, in four orders.
    static let severalRefused = [
        #"{"value":"x","eventTypeRaw":"nope","occurredAt":"yesterday","note":7,"updatedAt":false,"id":[]}"#,
        #"{"occurredAt":"yesterday","note":7,"id":[],"value":"x","updatedAt":false,"eventTypeRaw":"nope"}"#,
        #"{"note":7,"updatedAt":false,"value":"x","id":[],"eventTypeRaw":"nope","occurredAt":"yesterday"}"#,
        #"{"id":[],"occurredAt":"yesterday","eventTypeRaw":"nope","updatedAt":false,"note":7,"value":"x"}"#,
    ]

    /// The key of `values` (JSON object text) that comes first in the text.
    static func firstKey(_ values: String) throws -> String {
        try #require(try JSONDecoder().decode([String: JSONValue].self, from: Data(values.utf8)).keys.min {
            values.range(of: "\"\($0)\"")!.lowerBound < values.range(of: "\"\($1)\"")!.lowerBound
        })
    }

    @Test("Of several refused values, the error names the first one sent", arguments: severalRefused)
    func firstRefusedValueNamed(values: String) async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        let first = try Self.firstKey(values)
        let refused = try await Self.insert(store, values)
        #expect(refused["ok"] == false)
        #expect(refused["error"]?["details"]?["property"] == .string(first), "\(refused)")
        #expect(refused["error"]?["details"]?["index"] == 0)
    }

    @Test("Base64, UUID and URI text is read as Foundation reads it, Integer 64 text as Int64 reads it")
    func richerTypesText() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("kinds.json")
        try AttributeTypeTests.modelJSON.write(toFile: path, atomically: true, encoding: .utf8)
        let store = try await StoreFixture.start(["--model", path], directory: directory)
        defer { Task { _ = await store.stop() } }
        let client = try await store.client()
        let context = JSONValue.string(try await client.openContext())

        /// The stored wire form of `value` in `property`, or the refusal's code.
        func stored(_ property: String, _ value: String) async throws -> Result<JSONValue, WireError> {
            let inserted: JSONValue
            do {
                inserted = try await client.call("object.insert", ["context": context, "entity": "Sample",
                                                                   "values": .object(["code": "k", property: .string(value)])])
            } catch {
                return .failure(error)
            }
            let object = try await client.call("object.get", ["context": context, "objectID": inserted["objectID"] ?? .null])
            return .success(object["values"]?[property] ?? .null)
        }

        // Base64: padded text only; bytes as Foundation decodes them, also where the last
        // group's unused bits are not zero.
        for text in ["", "AAEC/f7/", "AAE=", "AA==", "QR==", "QUJ=", "+/+/"] {
            let expected = try #require(Data(base64Encoded: text)).base64EncodedString()
            #expect(try await stored("blob", text).get() == .string(expected), "\(text)")
        }
        for text in ["AAE", "AA=A", "A===", "AA AA===", "AAE=AAE=", "ÄÄÄÄ"] {
            #expect(try await stored("blob", text).failureValue?.code == .validationInvalidValue, "\(text)")
        }
        // UUIDs: any case in, upper case kept; anything else refused.
        for text in ["E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", "E621e1f8-C36C-495A-93FC-0C247A3E6E5F"] {
            #expect(try await stored("ident", text).get() == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "\(text)")
        }
        for text in ["E621E1F8C36C495A93FC0C247A3E6E5F", "E621E1F8-C36C-495A-93FC-0C247A3E6E5G", "E621E1F8-C36C-495A-93FC_0C247A3E6E5F", ""] {
            #expect(try await stored("ident", text).failureValue?.code == .validationInvalidValue, "\(text)")
        }
        // URIs: a scheme (a letter, then letters, digits, + - .) and a colon, no white space
        // anywhere, Unicode's included.
        for text in ["https://example.com/a?b=c", "h:x", "a+b-c.d9:rest", "https://example.com/café", "mailto:é@example.com"] {
            #expect(try await stored("link", text).get() == .string(text), "\(text)")
        }
        for text in ["no scheme here", "https://example.com/a b", "https://example.com/\t", "1http://x", ":x", "ht tp://x", "é://x",
                     "https://example.com/\u{00A0}", "https://example.com/\u{2028}", "ht_tp://x", "https"] {
            #expect(try await stored("link", text).failureValue?.code == .validationInvalidValue, "\(text)")
        }
        // Integer 64 as text: decimal digits with an optional minus, at most 20 bytes, within 64 bits.
        for (text, expected) in [("9223372036854775807", JSONValue.string("9223372036854775807")), ("-9223372036854775808", "-9223372036854775808"),
                                 ("9007199254740993", "9007199254740993"), ("-0", 0), ("007", 7)] {
            #expect(try await stored("large", text).get() == expected, "\(text)")
        }
        for text in ["9223372036854775808", "-9223372036854775809", "000000000000000000001", "", "-", "+1", " 1", "1.0", "١"] {
            #expect(try await stored("large", text).failureValue?.code == .validationInvalidValue, "\(text)")
        }
        client.close()
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case let .failure(failure) = self { return failure }
        return nil
    }
}
