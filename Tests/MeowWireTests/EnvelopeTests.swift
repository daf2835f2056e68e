import Foundation
import MeowWire
import Testing

@Suite("Envelope and values")
struct EnvelopeTests {
    @Test("an error reply with an unknown id encodes id as null")
    func errorReplyNullID() throws {
        let data = try JSONEncoder().encode(ErrorReply(id: nil, error: WireError(.invalidJSON, "bad")))
        let value = try JSONDecoder().decode(JSONValue.self, from: data)
        #expect(value["id"] == .null)
        #expect(value["ok"] == false)
        #expect(value["error"]?["code"] == "invalidJSON")
    }

    @Test("CloudKit codes carry their CKError number in details")
    func cloudKitNumber() {
        #expect(WireError(.invalidArguments, "x").details["ckErrorCode"] == 12)
        #expect(WireError(.limitExceeded, "x").details["ckErrorCode"] == 27)
        #expect(WireError(.invalidJSON, "x").details["ckErrorCode"] == nil)
    }

    @Test("request ids are integers or strings and round-trip")
    func requestIDs() throws {
        for id in [RequestID.int(7), .string("a-1")] {
            let data = try JSONEncoder().encode(id)
            #expect(try JSONDecoder().decode(RequestID.self, from: data) == id)
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(RequestID.self, from: Data("true".utf8)) }
    }

    @Test("JSONValue keeps integers, doubles, nesting and null")
    func jsonValueRoundTrip() throws {
        let value: JSONValue = ["a": 1, "b": 2.5, "c": [true, nil, "x"], "d": ["e": -3]]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }

    @Test("an incoming event is told apart from a reply")
    func incomingEvent() throws {
        let event = try JSONDecoder().decode(IncomingMessage.self, from: Data(#"{"event":"x","seq":3,"data":{}}"#.utf8))
        #expect(event.isEvent)
        let reply = try JSONDecoder().decode(IncomingMessage.self, from: Data(#"{"id":1,"ok":true,"result":{}}"#.utf8))
        #expect(!reply.isEvent)
    }
}
