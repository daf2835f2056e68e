import Foundation
import MeowWire
import Testing
import TestSupport

/// Attribute values the store would hold but the cloud refuses (`FieldValueRules`): refused
/// when a client saves them, so a device never keeps a value its mirror cannot upload.
@Suite("Attribute values the cloud cannot hold")
struct ValueRangeTests {
    /// One object.insert written as raw text (numbers exactly as written); the reply.
    static func insert(_ connection: RawConnection, id: Int, context: String, values: String) throws -> JSONValue {
        connection.send(json: #"{"id":\#(id),"op":"object.insert","params":{"context":"\#(context)","entity":"CareEvent","values":{"id":"v\#(id)","eventTypeRaw":"note","updatedAt":"2026-07-27T09:00:00Z",\#(values)}}}"#)
        return try connection.nextMessage()
    }

    @Test("Dates outside years 0001–9999 are refused by name; the edges are kept")
    func datesOutsideTheCloudsRangeAreRefused() async throws {
        let store = try await StoreFixture.start()
        let raw = try RawConnection(path: store.socket)
        try raw.hello()
        raw.send(json: #"{"id":"open","op":"context.open","params":{"mergePolicy":"error","name":"raw"}}"#)
        let context = try #require(try raw.nextMessage()["result"]?["context"]?.stringValue)
        let refused = [
            ("occurredAt", #""occurredAt":"0000-12-31T23:59:59Z""#),
            ("occurredAt", #""occurredAt":"9999-12-31T23:59:59-01:00""#),
        ]
        for (index, (property, values)) in refused.enumerated() {
            let reply = try Self.insert(raw, id: index + 1, context: context, values: values)
            #expect(reply["error"]?["code"] == "validationInvalidValue", "\(values): \(reply)")
            #expect(reply["error"]?["message"]?.stringValue?.contains(property) == true, "\(values): \(reply)")
        }
        for (index, values) in [#""occurredAt":"0001-01-01T00:00:00Z","value":0"#, #""occurredAt":"9999-12-31T23:59:59.999Z","value":-0.5"#].enumerated() {
            let reply = try Self.insert(raw, id: 10 + index, context: context, values: values)
            #expect(reply["ok"] == true, "\(values): \(reply)")
        }
        _ = await store.stop()
    }
}
