#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing

/// Many connections each sending half of a large frame: the service buffers no more than its
/// budget, refuses the frames past it, and gives the memory back once they close.
@Suite("Frame memory")
struct FrameMemoryTests {
    /// The service's anonymous resident memory (its heap), in MiB.
    static func heapMiB(_ pid: Int32) -> Double {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("RssAnon:") } ?? ""
        return Double(Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1) / 1024
    }

    /// Waits (by asking, up to a generous deadline) until the service reports `open` connections.
    static func waitForOpenConnections(_ witness: RawConnection, _ open: Int) throws -> Bool {
        let deadline = Date().addingTimeInterval(60)
        var id = 100
        while Date() < deadline {
            id += 1
            witness.send(["id": .int(id), "op": "info"])
            if try witness.nextMessage()["result"]?["connections"]?["open"] == .int(open) { return true }
        }
        return false
    }

    @Test("40 half-sent 16 MiB frames: buffered memory stays within --max-buffered-bytes, frames past it get bufferBudgetExceeded, and the memory is returned after they close")
    func halfSentFrames() async throws {
        let budget = 64 << 20
        let service = try await RunningService.start("sync-service", ["--max-buffered-bytes", String(budget), "--max-connections-per-peer", "64"])
        let witness = try service.greeted()
        #expect(try Self.waitForOpenConnections(witness, 1))
        let baseline = Self.heapMiB(service.process.pid)
        // A header announcing 16 MiB, then 6 MiB of the body: the frame never completes.
        let half = [0x01, 0x00, 0x00, 0x00] + [UInt8](repeating: UInt8(ascii: " "), count: 6 << 20)
        var connections: [RawConnection] = []
        for _ in 0..<40 {
            let connection = try service.greeted()
            connection.send(bytes: half)
            connections.append(connection)
        }
        // Every connection's bytes were taken by the service (or it closed the connection):
        // a reply to the witness comes after them on the service's side only by chance, so
        // memory is read once the refused ones have been answered.
        var refused = 0
        for connection in connections {
            if let reply = connection.readFrame(timeout: 0.2), let value = try? JSONDecoder().decode(JSONValue.self, from: Data(reply)) {
                #expect(value["error"]?["code"] == "bufferBudgetExceeded")
                refused += 1
            }
        }
        let holding = Self.heapMiB(service.process.pid)
        witness.send(["id": 3, "op": "info"])
        let counted = try #require(try witness.nextMessage()["result"]?["bufferedBytes"]?["unfinishedFrames"]?.intValue)
        #expect(counted > 0 && counted <= budget)
        #expect(refused > 0, "no frame was refused although 240 MiB were sent against a 64 MiB budget")
        // Everything sent was 240 MiB; the budget is 64 MiB (buffers may be up to a quarter
        // larger than what they hold, plus threads and the witness).
        #expect(holding - baseline < 150, "heap grew by \(holding - baseline) MiB with \(40 - refused) half-sent frames held")
        connections.removeAll()
        #expect(try Self.waitForOpenConnections(witness, 1))
        let after = Self.heapMiB(service.process.pid)
        witness.send(["id": 4, "op": "info"])
        #expect(try witness.nextMessage()["result"]?["bufferedBytes"]?["unfinishedFrames"] == 0)
        #expect(after - baseline < 40, "heap stayed \(after - baseline) MiB above its start after the connections closed")
        #expect(try service.stillServes())
        _ = await service.process.stop()
    }
}
