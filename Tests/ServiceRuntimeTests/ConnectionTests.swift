#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
@testable import ServiceRuntime
import TestSupport
import Testing

/// The request path of one connection (`Connection.serve`), driven over a socket pair.
@Suite("A connection: hello, requests, replies, errors")
struct ConnectionTests {
    @Test("before hello every op is helloRequired and the connection stays open; serve reports no hello")
    func helloRequiredFirst() async throws {
        let served = try ServedConnection()
        let reply = try served.client.call(#"{"id":1,"op":"ping"}"#)
        #expect(reply["ok"] == false)
        #expect(reply["error"]?["code"] == "helloRequired")
        #expect(reply["error"]?["details"]?["op"] == "ping")
        let again = try served.client.call(#"{"id":2,"op":"test.echoName","params":{"name":"x"}}"#)
        #expect(again["error"]?["code"] == "helloRequired")
        #expect(await served.end() == false)
    }

    @Test("hello answers the service, the protocol version, the connection id, the topics and the limits")
    func helloResult() async throws {
        let served = try ServedConnection(id: 7) { $0.maxFrameBytes = 4096 }
        let hello = try served.client.hello()
        let result = try #require(hello["result"])
        #expect(hello["id"] == 1)
        #expect(result["service"] == "test-service")
        #expect(result["version"] == "9.9.9")
        #expect(result["protocol"] == "meowcare-wire")
        #expect(result["protocolVersion"] == 1)
        #expect(result["connectionID"] == 7)
        #expect(result["topics"] == ["service", "progress", "things"])
        #expect(result["limits"]?["maxFrameBytes"] == 4096)
        #expect(served.handle.helloDone)
        #expect(served.handle.clientName == "unit-test")
        #expect(await served.end() == true)
    }

    @Test("hello: no common version is unsupportedVersion (hello not done); a second hello is helloAlreadyDone")
    func helloVersionsAndRepeats() async throws {
        let served = try ServedConnection()
        let tooNew = try served.client.call(#"{"id":1,"op":"hello","params":{"minVersion":2,"maxVersion":3,"client":"x"}}"#)
        #expect(tooNew["error"]?["code"] == "unsupportedVersion")
        #expect(tooNew["error"]?["details"]?["supported"] == ["min": 1, "max": 1])
        #expect(tooNew["error"]?["details"]?["requested"] == ["min": 2, "max": 3])
        #expect(!served.handle.helloDone)
        try served.client.hello(id: 2)
        let second = try served.client.hello(id: 3)
        #expect(second["error"]?["code"] == "helloAlreadyDone")
        _ = await served.end()
    }

    @Test("an op the service does not have is unknownOp naming it; the connection goes on")
    func unknownOp() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        let reply = try served.client.call(#"{"id":"s-1","op":"no.suchOp","params":{}}"#)
        #expect(reply["id"] == "s-1")
        #expect(reply["error"]?["code"] == "unknownOp")
        #expect(reply["error"]?["details"]?["op"] == "no.suchOp")
        #expect(reply["error"]?["message"]?.stringValue?.contains("'no.suchOp'") == true)
        let pong = try served.client.call(#"{"id":2,"op":"ping","params":{"echo":[1,"two"]}}"#)
        #expect(pong["result"] == ["pong": true, "echo": [1, "two"]])
        _ = await served.end()
    }

    @Test("bad params are missingField or invalidField with the field's JSON path; the op is not run",
          arguments: [
              (#"{}"#, "missingField", "params.name"),
              (#"{"name":null}"#, "missingField", "params.name"),
              (#"{"name":5}"#, "invalidField", "params.name"),
          ])
    func badParams(params: String, code: String, field: String) async throws {
        let served = try ServedConnection()
        try served.client.hello()
        let reply = try served.client.call(#"{"id":4,"op":"test.echoName","params":\#(params)}"#)
        #expect(reply["id"] == 4)
        #expect(reply["error"]?["code"] == .string(code))
        #expect(reply["error"]?["details"]?["field"] == .string(field))
        #expect(reply["error"]?["details"]?["op"] == "test.echoName")
        _ = await served.end()
    }

    @Test("a bad value deep in params names its path, index included, and what was expected")
    func badNestedParams() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        let reply = try served.client.call(#"{"id":5,"op":"test.items","params":{"items":[{"name":"a","count":1},{"name":"b","count":"two"}]}}"#)
        #expect(reply["error"]?["code"] == "invalidField")
        #expect(reply["error"]?["details"]?["field"] == "params.items[1].count")
        #expect(reply["error"]?["details"]?["expected"] == "an integer")
        let good = try served.client.call(#"{"id":6,"op":"test.items","params":{"items":[{"name":"a","count":1}]}}"#)
        #expect(good["result"] == ["count": 1])
        _ = await served.end()
    }

    @Test("params left out or null are read as {}: optional fields absent, required ones missing")
    func absentParams() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        #expect(try served.client.call(#"{"id":1,"op":"test.optional"}"#)["result"] == ["note": nil])
        #expect(try served.client.call(#"{"id":2,"op":"test.optional","params":null}"#)["result"] == ["note": nil])
        let missing = try served.client.call(#"{"id":3,"op":"test.echoName"}"#)
        #expect(missing["error"]?["code"] == "missingField")
        #expect(missing["error"]?["details"]?["op"] == "test.echoName")
        #expect(missing["error"]?["details"]?["field"] == "params.name", "named as when params are given")
        _ = await served.end()
    }

    @Test("an envelope without id or op, or with ill-typed ones, is refused with the field named")
    func badEnvelopes() async throws {
        let served = try ServedConnection()
        let cases: [(String, JSONValue, String, String)] = [
            (#"{"op":"ping"}"#, .null, "missingField", "id"),
            (#"{"id":true,"op":"ping"}"#, .null, "invalidField", "id"),
            (#"{"id":3}"#, 3, "missingField", "op"),
            (#"{"id":4,"op":7}"#, 4, "invalidField", "op"),
        ]
        for (body, id, code, field) in cases {
            let reply = try served.client.call(body)
            #expect(reply["id"] == id, "\(body)")
            #expect(reply["error"]?["code"] == .string(code), "\(body)")
            #expect(reply["error"]?["details"]?["field"] == .string(field), "\(body)")
        }
        _ = await served.end()
    }

    @Test("bodies that are not a JSON object are answered with id null and the connection stays open")
    func badBodies() async throws {
        let served = try ServedConnection()
        let cases: [([UInt8], String)] = [
            (Array(#"{"id":1,"op":"#.utf8), "invalidJSON"),
            (Array("[1,2]".utf8), "notAnObject"),
            ([0x7B, 0xFF, 0xFE, 0x7D], "invalidUTF8"),
        ]
        for (body, code) in cases {
            served.client.sendBody(body)
            let reply = try served.client.next()
            #expect(reply["id"] == .null)
            #expect(reply["error"]?["code"] == .string(code))
        }
        #expect(try served.client.hello()["ok"] == true)
        _ = await served.end()
    }

    @Test("what a body is, told from its bytes: invalid UTF-8, invalid JSON, or which kind of non-object")
    func bodyErrors() throws {
        let body = Array("{".utf8)
        var failure: JSONParser.Failure?
        do { _ = try JSONParser.parse(body) } catch { failure = error }
        let parseFailure = try #require(failure)
        let notJSON = Connection.bodyError(body, parseFailure)
        #expect(notJSON.code == .invalidJSON)
        #expect(notJSON.details["bytes"] == 1)
        #expect(notJSON.message.contains("\(parseFailure)"))
        #expect(Connection.bodyError([0xC3], TestFailure("x")).code == .invalidUTF8)
        for (text, kind) in [("[]", "an array"), ("\"s\"", "a string"), ("true", "a boolean"), ("null", "null"), ("12", "a number")] {
            let mismatch = DecodingError.typeMismatch([String: JSONValue].self, .init(codingPath: [], debugDescription: ""))
            let error = Connection.bodyError(Array(text.utf8), mismatch)
            #expect(error.code == .notAnObject)
            #expect(error.details["found"] == .string(kind))
        }
    }

    @Test("an empty frame is fatal: emptyFrame, then the connection closes")
    func emptyFrameCloses() async throws {
        let served = try ServedConnection()
        served.client.sendRaw([0, 0, 0, 0])
        let reply = try served.client.next()
        #expect(reply["error"]?["code"] == "emptyFrame")
        #expect(await served.served() == false)
        #expect(served.client.closesWithoutFrame())
    }

    @Test("a length over --max-frame-bytes is fatal: frameTooLarge with the length and the limit")
    func frameTooLargeCloses() async throws {
        let served = try ServedConnection { $0.maxFrameBytes = 100 }
        served.client.sendRaw([0, 0, 0, 101])
        let reply = try served.client.next()
        #expect(reply["error"]?["code"] == "frameTooLarge")
        #expect(reply["error"]?["details"]?["length"] == 101)
        #expect(reply["error"]?["details"]?["limit"] == 100)
        _ = await served.served()
        #expect(served.client.closesWithoutFrame())
    }

    @Test("the peer's EOF inside a frame is answered truncatedFrame (it only half-closed)")
    func eofInsideAFrame() async throws {
        let served = try ServedConnection()
        served.client.sendRaw([0, 0, 0, 10] + Array("{\"id\"".utf8))
        shutdown(served.client.fd, Int32(SHUT_WR))
        let reply = try served.client.next()
        #expect(reply["error"]?["code"] == "truncatedFrame")
        #expect(reply["error"]?["details"]?["expected"] == 10)
        #expect(reply["error"]?["details"]?["received"] == 5)
        #expect(await served.served() == false)
    }

    @Test("no hello within --hello-timeout-ms: helloTimeout, then the connection closes")
    func helloTimeout() async throws {
        let served = try ServedConnection { $0.helloTimeoutMilliseconds = 20 }
        let reply = try served.client.next()  // nothing sent: the service speaks first, at its deadline
        #expect(reply["id"] == .null)
        #expect(reply["error"]?["code"] == "helloTimeout")
        #expect(reply["error"]?["details"]?["timeoutMilliseconds"] == 20)
        #expect(await served.served() == false)
        #expect(served.client.closesWithoutFrame())
    }

    @Test("a frame left unfinished past --frame-timeout-ms is cut off with truncatedFrame")
    func frameTimeout() async throws {
        let served = try ServedConnection { $0.frameTimeoutMilliseconds = 20 }
        try served.client.hello()
        served.client.sendRaw([0, 0, 0, 50, UInt8(ascii: "{")])
        let reply = try served.client.next()
        #expect(reply["error"]?["code"] == "truncatedFrame")
        #expect(reply["error"]?["details"]?["expected"] == 50)
        #expect(reply["error"]?["details"]?["received"] == 1)
        #expect(await served.served() == true)
        #expect(served.client.closesWithoutFrame())
    }

    @Test("an unfinished frame that would pass --max-buffered-bytes ends its connection with bufferBudgetExceeded, and its charge is returned")
    func bufferBudget() async throws {
        let served = try ServedConnection { $0.maxBufferedBytes = 1000 }
        try served.client.hello()
        // Announce 300 KiB and send 100 KiB: past the 64 KiB every connection has free.
        served.client.sendRaw([0, 0x04, 0xB0, 0x00] + [UInt8](repeating: UInt8(ascii: " "), count: 100 * 1024))
        let reply = try served.client.next()
        #expect(reply["error"]?["code"] == "bufferBudgetExceeded")
        #expect(reply["error"]?["details"]?["limit"] == 1000)
        #expect(await served.served() == true)
        #expect(served.client.closesWithoutFrame())
        #expect(served.server.frameBudget.inUse == 0)
    }

    @Test("pipelined requests sent in one write are answered in the order sent")
    func pipelinedInOrder() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        var bytes: [UInt8] = []
        for id in 10..<30 {
            let op = id % 3 == 0 ? "no.such" : "ping"
            bytes += FrameEncoder.frame(Array(#"{"id":\#(id),"op":"\#(op)","params":{"echo":\#(id)}}"#.utf8))
        }
        served.client.sendRaw(bytes)
        for id in 10..<30 {
            let reply = try served.client.next()
            #expect(reply["id"] == .int(id))
            #expect(reply["ok"] == .bool(id % 3 != 0))
        }
        _ = await served.end()
    }

    @Test("a handler's WireError goes out as it is, a ServiceError as its wire error without its origin, anything else as internalError")
    func handlerErrors() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        let wire = try served.client.call(#"{"id":1,"op":"test.fail","params":{"kind":"wire"}}"#)
        #expect(wire["error"] == ["code": "invalidArguments", "message": "wire failure", "details": ["why": "test", "ckErrorCode": 12]])
        let service = try served.client.call(#"{"id":2,"op":"test.fail","params":{"kind":"service"}}"#)
        #expect(service["error"]?["code"] == "limitExceeded")
        #expect(service["error"]?["message"] == "service failure")
        #expect("\(service)".contains(".swift") == false)
        let other = try served.client.call(#"{"id":3,"op":"test.fail","params":{"kind":"other"}}"#)
        #expect(other["id"] == 3)
        #expect(other["error"]?["code"] == "internalError")
        #expect(other["error"]?["message"]?.stringValue?.contains("'test.fail'") == true)
        _ = await served.end()
    }

    @Test("access levels: a user's op needs a credential, an admin op the admin's",
          arguments: [(nil, nil, "notAuthenticated", "notAuthenticated"),
                      ("user-secret", "alice", "ok", "permissionFailure"),
                      ("admin-secret", "_admin", "ok", "ok")] as [(String?, String?, String, String)])
    func accessLevels(credential: String?, user: String?, userOp: String, adminOp: String) async throws {
        let served = try ServedConnection()
        let hello = try served.client.hello(credential: credential)
        // Absent (not null) when no credential identified a user, as docs/PROTOCOL.md says.
        #expect(hello["result"]?["user"] == user.map { .string($0) })
        #expect(served.handle.principal?.user == user)
        func outcome(_ reply: JSONValue) -> String { reply["ok"] == true ? "ok" : reply["error"]?["code"]?.stringValue ?? "?" }
        let whoami = try served.client.call(#"{"id":2,"op":"test.whoami"}"#)
        #expect(outcome(whoami) == userOp)
        if let user { #expect(whoami["result"]?["user"] == .string(user)) }
        #expect(outcome(try served.client.call(#"{"id":3,"op":"test.admin"}"#)) == adminOp)
        _ = await served.end()
    }

    @Test("a credential no user has: notAuthenticated after the throttle's first delay, and hello is not done")
    func refusedCredential() async throws {
        let served = try ServedConnection()
        let started = ContinuousClock.now
        let refused = try served.client.hello(credential: "wrong")
        #expect(ContinuousClock.now - started >= .milliseconds(HelloThrottle.firstDelayMilliseconds))
        #expect(refused["error"]?["code"] == "notAuthenticated")
        #expect(!served.handle.helloDone)
        #expect(try served.client.hello(credential: "user-secret", id: 2)["result"]?["user"] == "alice")
        _ = await served.end()
    }

    @Test("while a request runs, RequestOrigin names its connection; elsewhere it is nil")
    func requestOrigin() async throws {
        let served = try ServedConnection(id: 41)
        try served.client.hello()
        let reply = try served.client.call(#"{"id":2,"op":"test.origin"}"#)
        #expect(reply["result"] == ["origin": 41, "connection": 41])
        #expect(RequestOrigin.current == nil)
        _ = await served.end()
    }

    @Test("params that read themselves are read from their bytes by their reader, whatever the envelope's form")
    func compactRequestsReadFromBytes() async throws {
        let served = try ServedConnection()
        try served.client.hello()
        let compact = try served.client.call(#"{"id":2,"op":"test.scanned","params":{"value":"x\u0041"}}"#)
        #expect(compact["result"] == ["value": "xA", "viaReader": true])
        for body in [#"{"id": 3, "op": "test.scanned", "params": {"value": "xA"}}"#,
                     #"{"id":"four","op":"test.scanned","params":{"value":"xA"}}"#,
                     #"{"op":"test.scanned","id":5,"params":{"value":"xA"}}"#] {
            let parsed = try served.client.call(body)
            #expect(parsed["result"] == ["value": "xA", "viaReader": true], "\(body)")
        }
        let bad = try served.client.call(#"{"id":6,"op":"test.scanned","params":{"value":1}}"#)
        #expect(bad["error"]?["details"]?["field"] == "params.value")
        _ = await served.end()
    }
}
