#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Hostile input against live services: random and mutated frames, deep nesting, huge strings,
/// invalid UTF-8, numbers out of range, and well-formed requests with hostile params for every op
/// the service lists. The services must stay up, stay small, and keep serving another client.
/// Seeded, so a failure reproduces.
@Suite("Hostile input")
struct HostileInputTests {
    typealias Generator = SplitMix64

    static let hostileValues: [String] = [
        "null", "true", "-1", "0", "1e308", "-1e308", "1e400", "123456789012345678901234567890", "-9223372036854775809",
        "0.0000001", "\"\"", "\"x\"", "\"\\u0000\"", "\"\\ud800\"", "[]", "{}", "[[[[[[[[[[]]]]]]]]]]",
        "{\"a\":{\"b\":{\"c\":null}}}", "\"" + String(repeating: "é", count: 5000) + "\"",
        "\"x-coredata:///CareEvent/t00000000-0000-0000-0000-000000000000\"", "\"x-coredata://nope/CareEvent/p1\"",
        "\"' OR 1=1 --\"", "\"session.id == %@ AND (\"", "[1,\"a\",null,{}]",
    ]

    static func hostileParams(_ rng: inout Generator, keys: [String]) -> String {
        var fields: [String] = []
        for key in keys.shuffled(using: &rng).prefix(Int.random(in: 0...keys.count, using: &rng)) {
            fields.append("\"\(key)\":\(hostileValues.randomElement(using: &rng)!)")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static let paramNames = ["context", "objectID", "objectIDs", "entity", "values", "store", "stores", "predicate", "arguments",
                             "sortDescriptors", "limit", "offset", "objects", "uuid", "zone", "zoneName", "ownerName", "permission",
                             "afterToken", "beforeToken", "mergePolicy", "name", "author", "database", "zoneID", "zoneIDs", "saves",
                             "deletes", "recordIDs", "since", "savePolicy", "atomic", "user", "credential", "topics", "echo", "report",
                             "resultFormat", "participants", "shareName", "scope", "snapshot", "now", "code", "count"]

    static func mutate(_ frame: [UInt8], _ rng: inout Generator) -> [UInt8] {
        var bytes = frame
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !bytes.isEmpty else { break }
            let index = Int.random(in: 4..<max(5, bytes.count), using: &rng) % bytes.count
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: bytes[index] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: index)
            default: bytes.remove(at: index)
            }
        }
        // Keep the length prefix honest, so the body reaches the JSON layer (broken prefixes,
        // which end a connection, are sent once at the end of a round).
        if bytes.count > 4 {
            let n = UInt32(bytes.count - 4)
            bytes[0] = UInt8(n >> 24); bytes[1] = UInt8((n >> 16) & 0xFF); bytes[2] = UInt8((n >> 8) & 0xFF); bytes[3] = UInt8(n & 0xFF)
        }
        return bytes
    }

    static func residentKiB(_ pid: Int32) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    @Test("random, mutated and hostile frames: the service stays up, bounded, and keeps serving",
          arguments: ["store-service", "sync-service"])
    func survivesHostileInput(executable: String) async throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("h.sock")
        var extra: [String] = []
        if executable == "sync-service" {
            try #"{"users":[{"user":"u","credential":"u-secret"}]}"#.write(toFile: directory.file("users.json"), atomically: true, encoding: .utf8)
            extra = ["--users", directory.file("users.json"), "--admin-credential", "admin-secret-for-tests"]
        }
        let service = try await MeowProcess.start(executable, ["--socket", socket, "--in-memory", "--max-frame-bytes", "1048576"] + extra)
        let witness = try RawConnection(path: socket)
        #expect(try witness.hello(credential: executable == "sync-service" ? "u-secret" : nil)["ok"] == true)
        let ops = try witness.nextMessageAfter(["id": "ops", "op": "info"])["result"]?["ops"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(ops.count > 5)

        // MEOW_FUZZ_SEED / MEOW_FUZZ_ROUNDS widen a local run; CI uses the fixed seed.
        let environment = ProcessInfo.processInfo.environment
        var rng = Generator(state: environment["MEOW_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x4D45_4F57)  // "MEOW"
        let rounds = environment["MEOW_FUZZ_ROUNDS"].flatMap { Int($0) } ?? 24
        var tried = 0
        var replies = 0
        let credentials: [String?] = executable == "sync-service" ? ["u-secret", "admin-secret-for-tests", nil] : [nil]
        for round in 0..<rounds {
            let attacker = try RawConnection(path: socket)
            let credential = credentials[round % credentials.count]
            _ = try? attacker.hello(credential: credential)
            var batch: [UInt8] = []
            for _ in 0..<60 {
                tried += 1
                let op = ops.randomElement(using: &rng) ?? "ping"
                let valid = Array(#"{"id":\#(tried),"op":"\#(op)","params":\#(Self.hostileParams(&rng, keys: Self.paramNames))}"#.utf8)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: batch += Self.mutate(FrameEncoder.frame(valid), &rng)
                case 1: batch += FrameEncoder.frame(Array(repeating: UInt8(ascii: "["), count: 5000) + Array(repeating: UInt8(ascii: "]"), count: 5000))
                case 2: batch += FrameEncoder.frame((0..<Int.random(in: 1...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
                case 3: batch += FrameEncoder.frame(Array(#"{"id":1,"op":"ping","params":{"echo":""#.utf8) + Array(repeating: 0x61, count: 200_000) + Array(#""}}"#.utf8))
                default: batch += FrameEncoder.frame(valid)
                }
            }
            // A quarter of the rounds also end with a broken length prefix (the connection closes).
            if round % 4 == 3 { batch += [0xFF, 0xFF, 0xFF, 0xFF] }
            // Send from a thread and read replies meanwhile (a client that never reads is the
            // slow-reader test's case); half-close, then drain until the service closes.
            let frames = batch
            let sender = Thread { attacker.send(bytes: frames); shutdown(attacker.fd, Int32(SHUT_WR)) }
            sender.start()
            let answered = attacker.drainUntilClosed(timeout: 30)
            #expect(answered != nil, "round \(round): the service did not finish the connection")
            replies += answered ?? 0
            witness.send(["id": .int(round), "op": "ping"])
            let pong = try witness.nextMessage(timeout: 30)
            #expect(pong["result"]?["pong"] == true, "round \(round): the witness was not served")
        }
        #expect(replies > tried * 3 / 4, "only \(replies) replies to \(tried) hostile frames")
        let health = try witness.nextMessageAfter(["id": "h", "op": "health"])
        #expect(health["result"]?["ready"] == true)
        let rss = Self.residentKiB(service.pid)
        #expect(rss > 0 && rss < 300 * 1024, "RSS \(rss) KiB after \(tried) hostile requests")
        #expect(service.isRunning)
        #expect(await service.stop() == 0)
        #expect(!service.lines.contains { $0.contains("Fatal error") || $0.contains("internalError") }, "\(service.lines.filter { $0.contains("internalError") || $0.contains("Fatal") }.prefix(3))")
    }
}

extension RawConnection {
    /// Reads frames until the service closes; returns how many arrived (nil: it did not close).
    func drainUntilClosed(timeout: TimeInterval) -> Int? {
        var count = 0
        while readFrame(timeout: timeout) != nil { count += 1 }
        return waitForClose(timeout: 0.01) ? count : nil
    }

    /// Sends a request and returns the reply with its id (skipping events and other replies).
    func nextMessageAfter(_ request: JSONValue, timeout: TimeInterval = 30) throws -> JSONValue {
        send(request)
        while true {
            let message = try nextMessage(timeout: timeout)
            if message["id"] == request["id"] { return message }
        }
    }
}
