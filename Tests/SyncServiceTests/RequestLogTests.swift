import CloudWire
import Foundation
import MeowWire
@testable import SyncServiceKit
import Testing

@Suite("Request log")
struct RequestLogTests {
    static func trace(decisions: Int, deniedAt: Set<Int> = []) -> RequestTrace {
        let trace = RequestTrace()
        trace.database = "private"
        trace.decisions = (0..<decisions).map { index in
            ["decision": .string(deniedAt.contains(index) ? "denied" : "allowed"), "reason": "test", "recordName": .string("r\(index)")]
        }
        return trace
    }

    @Test("an entry keeps its first 20 decisions and the denied ones in memory, and counts what it left out")
    func decisionsAreCapped() throws {
        let log = try RequestLog(capacity: 10)
        log.record(connection: 1, user: "owner", op: "records.modify", trace: Self.trace(decisions: 400, deniedAt: [5, 200, 399]),
                   code: "partialFailure", time: 0)
        log.record(connection: 1, user: "owner", op: "records.modify", trace: Self.trace(decisions: 3), code: "ok", time: 1)
        let entries = log.entries(after: nil, limit: nil).entries ?? []
        #expect(entries[0].permissions.count == 22)
        #expect(entries[0].permissionsOmitted == 378)
        #expect(entries[0].permissions.filter { $0["decision"] == "denied" }.map { $0["recordName"] } == ["r5", "r200", "r399"])
        #expect(entries[1].permissions.count == 3)
        #expect(entries[1].permissionsOmitted == nil)
    }

    @Test("without a log file a trace builds the decisions the memory keeps (the first 20, then denied ones) and counts the rest")
    func allowedDecisionsPastTheKeptOnesAreCounted() throws {
        let log = try RequestLog(capacity: 10)
        let trace = Self.trace(decisions: 0)
        trace.decisionsKept = log.writesKept
        for index in 0..<400 {
            trace.decide(![5, 200, 399].contains(index), "test", record: "r\(index)")
        }
        #expect(trace.decisions.count == 22 && trace.decisionsOmitted == 378)
        log.record(connection: 1, user: "owner", op: "records.modify", trace: trace, code: "partialFailure", time: 0)
        let entry = try #require(log.entries(after: nil, limit: nil).entries?.first)
        // The same entry as one whose trace built all 400 (`decisionsAreCapped`).
        #expect(entry.permissions.count == 22 && entry.permissionsOmitted == 378)
        #expect(entry.permissions.filter { $0["decision"] == "denied" }.map { $0["recordName"] } == ["r5", "r200", "r399"])
        #expect(entry.permissions.prefix(20).map { $0["recordName"] } == (0..<20).map { .string("r\($0)") })
    }

    @Test("without a log file a trace works out the changed fields of the writes the memory keeps, and counts the rest")
    func writesPastTheKeptOnesAreCountedNotWorkedOut() throws {
        let log = try RequestLog(capacity: 10)
        #expect(log.writesKept == 20)
        let trace = Self.trace(decisions: 0)
        trace.writesKept = log.writesKept
        var workedOut = 0, sharesLookedUp = 0
        func changed() -> [String] { workedOut += 1; return ["title"] }
        func share() -> String? { sharesLookedUp += 1; return "cloudkit.zoneshare" }
        for index in 0..<50 {
            trace.noteWrite("saved", record: "r\(index)", type: "Note", zone: ZoneID(zoneName: "Z", ownerName: "owner"), changed: changed(), share: share())
        }
        #expect(workedOut == 20 && sharesLookedUp == 20)
        log.record(connection: 1, user: "owner", op: "records.modify", trace: trace, code: "ok", time: 0)
        let entry = try #require(log.entries(after: nil, limit: nil).entries?.first)
        #expect(entry.writes?.count == 20 && entry.writesOmitted == 30)
        #expect(entry.writes?.last?["recordName"] == "r19" && entry.writes?.last?["share"] == "cloudkit.zoneshare")

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("requests-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try RequestLog(capacity: 10, path: path).writesKept == nil)
    }

    @Test("an entry keeps its first 20 writes in memory and counts the rest; one without writes or shares has neither member")
    func writesAreCapped() throws {
        let log = try RequestLog(capacity: 10)
        let trace = Self.trace(decisions: 0)
        trace.writes = (0..<50).map { ["action": "saved", "recordName": .string("r\($0)"), "changed": ["title"]] }
        trace.shares = [["change": "created", "recordName": "cloudkit.zoneshare", "zone": "owner/Zone"]]
        log.record(connection: 1, user: "owner", op: "records.modify", trace: trace, code: "ok", time: 0)
        log.record(connection: 1, user: "owner", op: "zones.fetch", trace: Self.trace(decisions: 0), code: "ok", time: 1)
        let result = log.entries(after: nil, limit: nil)
        let entries = result.entries ?? []
        #expect(entries[0].writes?.count == 20 && entries[0].writesOmitted == 30)
        #expect(entries[0].shares?.first?["change"] == "created")
        #expect(entries[1].writes == nil && entries[1].shares == nil)
        #expect(!(result.jsonLines ?? "").split(separator: "\n")[1].contains("writes"))
    }

    @Test("the log keeps the last `capacity` requests, in order")
    func capacity() throws {
        let log = try RequestLog(capacity: 10)
        for index in 0..<37 {
            log.record(connection: 1, user: nil, op: "op\(index)", trace: Self.trace(decisions: 0), code: "ok", time: Double(index))
        }
        let entries = log.entries(after: nil, limit: 100).entries ?? []
        #expect(entries.map(\.op) == (27..<37).map { "op\($0)" })
        #expect(log.entries(after: entries[7].seq, limit: 100).entries?.map(\.op) == ["op35", "op36"])
    }

    @Test("a reader asks for the entries as objects, as JSON lines, or both (the default), and gets only what it asked for")
    func formsAreAskedFor() throws {
        let log = try RequestLog(capacity: 10)
        for index in 0..<3 {
            log.record(connection: 1, user: "owner", op: "op\(index)", trace: Self.trace(decisions: 1), code: "ok", time: Double(index))
        }
        let both = log.entries(after: nil, limit: nil)
        #expect(both.entries?.map(\.op) == ["op0", "op1", "op2"])
        #expect(both.jsonLines?.split(separator: "\n").count == 3)
        let objects = log.entries(after: nil, limit: nil, form: .entries)
        #expect(objects.entries?.map(\.op) == ["op0", "op1", "op2"] && objects.jsonLines == nil)
        let lines = log.entries(after: 1, limit: nil, form: .jsonLines)
        #expect(lines.entries == nil && lines.jsonLines == both.jsonLines?.split(separator: "\n").dropFirst().joined(separator: "\n"))
    }
}
