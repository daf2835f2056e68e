#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Connections that never say hello, frames trickled a byte at a time, and one peer opening
/// connection after connection: none of them locks other clients out.
@Suite("Connection limits")
struct ConnectionLimitTests {
    @Test("a connection that says nothing is closed with helloTimeout; a greeted one stays", arguments: ["store-service", "sync-service"])
    func helloTimeout(executable: String) async throws {
        let service = try await RunningService.start(executable, ["--hello-timeout-ms", "200"])
        let greeted = try service.greeted()
        let silent = try service.raw()
        let reply = try silent.nextMessage(timeout: 30)
        #expect(reply["error"]?["code"] == "helloTimeout")
        #expect(reply["error"]?["details"]?["timeoutMilliseconds"] == 200)
        #expect(silent.waitForClose(timeout: 30))
        // The greeted connection is older than the silent one and still served.
        greeted.send(["id": 2, "op": "ping"])
        #expect(try greeted.nextMessage()["ok"] == true)
        _ = await service.process.stop()
    }

    @Test("a frame trickled one byte at a time is cut off at the frame timeout counted from its first byte")
    func trickledFrame() async throws {
        let service = try await RunningService.start("store-service", ["--frame-timeout-ms", "300"])
        let connection = try service.greeted()
        let body = Array(#"{"id":1,"op":"ping","params":{"echo":"\#(String(repeating: "m", count: 400))"}}"#.utf8)
        let frame = FrameEncoder.frame(body)
        // Each byte comes well inside the timeout: only a deadline from the first byte ends it.
        var answer: JSONValue?
        for byte in frame {
            connection.send(bytes: [byte])
            if let reply = connection.readFrame(timeout: 0.05) {
                answer = try JSONDecoder().decode(JSONValue.self, from: Data(reply))
                break
            }
        }
        if answer == nil, let reply = connection.readFrame(timeout: 10) {
            answer = try JSONDecoder().decode(JSONValue.self, from: Data(reply))
        }
        #expect(answer?["error"]?["code"] == "truncatedFrame", "the trickled frame was answered: \(String(describing: answer))")
        #expect(connection.waitForClose(timeout: 30))
        #expect(try service.stillServes())
        _ = await service.process.stop()
    }

    @Test("one process cannot take every slot: past --max-connections-per-peer it is refused, and another process is served")
    func perPeerLimit() async throws {
        let service = try await RunningService.start("sync-service", ["--max-connections", "16", "--max-connections-per-peer", "4"])
        let held = try (0..<4).map { _ in try service.raw() }
        let refused = try service.raw()
        let reply = try refused.nextMessage(timeout: 30)
        #expect(reply["error"]?["code"] == "tooManyConnections")
        #expect(reply["error"]?["details"]?["reason"] == "perPeer")
        #expect(refused.waitForClose(timeout: 30))
        // meowctl is another process: it gets a slot while this one holds its four.
        let other = try await MeowProcess.run("meowctl", ["call", "--socket", service.socket, "ping"])
        #expect(other.status == 0, "stderr: \(other.stderr)")
        _ = held
        _ = await service.process.stop()
    }

    @Test("connections that have not said hello get at most --max-pending-connections slots; greeted ones keep working")
    func pendingLimit() async throws {
        let service = try await RunningService.start("store-service", ["--max-pending-connections", "3", "--max-connections-per-peer", "10"])
        let greeted = try service.greeted()
        let silent = try (0..<3).map { _ in try service.raw() }
        let refused = try service.raw()
        let reply = try refused.nextMessage(timeout: 30)
        #expect(reply["error"]?["code"] == "tooManyConnections")
        #expect(reply["error"]?["details"]?["reason"] == "pending")
        greeted.send(["id": 2, "op": "ping"])
        #expect(try greeted.nextMessage()["ok"] == true)
        // Once one of them says hello, its slot stops counting as pending.
        #expect(try silent[0].hello()["ok"] == true)
        #expect(try service.stillServes())
        _ = await service.process.stop()
    }
}
