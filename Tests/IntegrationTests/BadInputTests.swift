#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Every bad-input case of the wire gets its documented answer, and the service keeps serving.
@Suite("Bad input over the socket")
struct BadInputTests {
    @Test("a request before hello gets helloRequired naming hello; the connection stays open")
    func requestBeforeHello() async throws {
        let service = try await RunningService.start()
        let connection = try service.raw()
        connection.send(["id": 1, "op": "ping"])
        let reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "helloRequired")
        #expect(reply["error"]?["message"]?.stringValue?.contains("hello") == true)
        #expect(reply["id"] == 1)
        #expect(try connection.hello()["ok"] == true)
        _ = await service.process.stop()
    }

    @Test("invalid UTF-8, invalid JSON and non-objects get error replies with id null; the connection stays open",
          arguments: [
            ([0xFF, 0xFE, 0x7B, 0x7D] as [UInt8], "invalidUTF8"),
            (Array("{\"id\":1,".utf8), "invalidJSON"),
            (Array("[1,2,3]".utf8), "notAnObject"),
            (Array("\"hello\"".utf8), "notAnObject"),
            (Array("42".utf8), "notAnObject"),
          ])
    func badBodies(body: [UInt8], code: String) async throws {
        let service = try await RunningService.start()
        let connection = try service.greeted()
        connection.send(body: body)
        let reply = try connection.nextMessage()
        #expect(reply["ok"] == false)
        #expect(reply["id"] == .null)
        #expect(reply["error"]?["code"] == .string(code))
        connection.send(["id": 2, "op": "ping"])
        #expect(try connection.nextMessage()["result"]?["pong"] == true)
        _ = await service.process.stop()
    }

    @Test("missing or ill-typed fields name the field; the reply keeps the request's id")
    func fieldErrors() async throws {
        let service = try await RunningService.start()
        let connection = try service.greeted()

        connection.send(json: #"{"op":"ping"}"#)
        var reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "missingField")
        #expect(reply["error"]?["details"]?["field"] == "id")

        connection.send(json: #"{"id":5}"#)
        reply = try connection.nextMessage()
        #expect(reply["id"] == 5)
        #expect(reply["error"]?["details"]?["field"] == "op")

        connection.send(json: #"{"id":6,"op":17}"#)
        reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "invalidField")

        connection.send(json: #"{"id":{"x":1},"op":"ping"}"#)
        reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "invalidField")
        #expect(reply["id"] == .null)

        connection.send(json: #"{"id":"s7","op":"subscribe","params":{"topics":"service"}}"#)
        reply = try connection.nextMessage()
        #expect(reply["id"] == "s7")
        #expect(reply["error"]?["code"] == "invalidField")
        #expect(reply["error"]?["details"]?["field"] == "params.topics")

        connection.send(json: #"{"id":8,"op":"subscribe","params":{}}"#)
        reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "missingField")
        #expect(reply["error"]?["details"]?["field"] == "params.topics")

        connection.send(json: #"{"id":9,"op":"pnig"}"#)
        reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "unknownOp")
        #expect(reply["error"]?["details"]?["op"] == "pnig")

        connection.send(["id": 10, "op": "ping"])
        #expect(try connection.nextMessage()["ok"] == true)
        _ = await service.process.stop()
    }

    @Test("an unsupported protocol version is refused with the supported range")
    func unsupportedVersion() async throws {
        let service = try await RunningService.start()
        let connection = try service.raw()
        connection.send(["id": 1, "op": "hello", "params": ["minVersion": 7, "maxVersion": 9, "client": "future"]])
        let reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "unsupportedVersion")
        #expect(reply["error"]?["details"]?["supported"] == ["min": 1, "max": 1])
        #expect(try connection.hello()["ok"] == true)  // still open; a valid hello now works
        _ = await service.process.stop()
    }

    @Test("hello twice is refused")
    func helloTwice() async throws {
        let service = try await RunningService.start()
        let connection = try service.greeted()
        #expect(try connection.hello()["error"]?["code"] == "helloAlreadyDone")
        _ = await service.process.stop()
    }

    @Test("a length of 0, a length over the maximum, and garbage bytes get an error frame, then the connection closes",
          arguments: [
            ([0, 0, 0, 0] as [UInt8], "emptyFrame"),
            ([0, 0, 0x10, 0x01] as [UInt8], "frameTooLarge"),
            (Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "frameTooLarge"),
          ])
    func brokenFrames(bytes: [UInt8], code: String) async throws {
        let service = try await RunningService.start("store-service", ["--max-frame-bytes", "4096"])
        let connection = try service.greeted()
        connection.send(bytes: bytes)
        let reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == .string(code))
        #expect(reply["id"] == .null)
        #expect(connection.waitForClose())
        #expect(try service.stillServes())
        _ = await service.process.stop()
    }

    @Test("hello advertises the configured maximum frame size")
    func advertisedLimit() async throws {
        let service = try await RunningService.start("sync-service", ["--max-frame-bytes", "4096"])
        let reply = try service.raw().hello()
        #expect(reply["result"]?["limits"]?["maxFrameBytes"] == 4096)
        _ = await service.process.stop()
    }

    @Test("EOF in the middle of a frame: truncatedFrame is sent back on the half-closed socket, then close")
    func eofMidFrame() async throws {
        let service = try await RunningService.start()
        let connection = try service.greeted()
        connection.send(bytes: [0, 0, 0, 50] + Array(#"{"id":1,"#.utf8))
        shutdown(connection.fd, Int32(SHUT_WR))
        let reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "truncatedFrame")
        #expect(reply["error"]?["details"]?["expected"] == 50)
        #expect(connection.waitForClose())
        #expect(try service.stillServes())
        _ = await service.process.stop()
    }

    @Test("a frame left incomplete past the frame timeout closes the connection with truncatedFrame")
    func frameTimeout() async throws {
        let service = try await RunningService.start("store-service", ["--frame-timeout-ms", "200"])
        let connection = try service.greeted()
        connection.send(bytes: [0, 0, 0, 50, 0x7B])
        let reply = try connection.nextMessage()
        #expect(reply["error"]?["code"] == "truncatedFrame")
        #expect(connection.waitForClose())
        _ = await service.process.stop()
    }

    @Test("a client that stops reading is disconnected after the send timeout; others are still served")
    func slowReader() async throws {
        let service = try await RunningService.start("store-service", ["--send-timeout-ms", "300"])
        let stalled = try service.greeted()
        // Pipeline ~24 MiB of replies and never read them: the socket buffers fill, the service's
        // send times out, and it drops this connection instead of stalling.
        let payload = String(repeating: "x", count: 60_000)
        var batch: [UInt8] = []
        for index in 0..<400 {
            batch += FrameEncoder.frame(Array(#"{"id":\#(index),"op":"ping","params":{"echo":"\#(payload)"}}"#.utf8))
        }
        let frames = batch
        let writer = Thread { stalled.send(bytes: frames) }
        writer.start()
        #expect(try service.stillServes())
        let dropped = await service.process.waitForLine(containing: "stopped reading", timeout: .seconds(30))
        #expect(dropped?.contains("\"connection\":1,") == true)
        #expect(try service.stillServes())
        _ = await service.process.stop()
    }

    @Test("the connection limit refuses one more with tooManyConnections")
    func connectionLimit() async throws {
        let service = try await RunningService.start("store-service", ["--max-connections", "2"])
        let first = try service.greeted()
        let second = try service.greeted()
        let third = try service.raw()
        let reply = try third.nextMessage()
        #expect(reply["error"]?["code"] == "tooManyConnections")
        #expect(third.waitForClose())
        _ = (first, second)
        _ = await service.process.stop()
    }
}
