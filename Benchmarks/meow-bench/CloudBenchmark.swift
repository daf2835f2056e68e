import CloudWire
import Foundation
import MeowWire
import SQLiteKit

/// sync-service: modify requests of 400 records (the mirror's request: default save policy,
/// atomic zone, no fields in the reply) beside raw SQLite inserts of the same rows with the same
/// durability (WAL, synchronous=FULL, one transaction per 400); the service's CPU per record
/// saved and per record fetched (the whole zone in pages of 1,000, as the mirror fetches); and the
/// cost of fetching 1 change from a zone of 100,000 records beside the same from a zone of 100.
enum CloudBenchmark {
    static let zone = ZoneID.coreDataZoneName

    static func run(_ quick: Bool) throws {
        let directory = NSTemporaryDirectory() + "mb-cloud-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory + "/cloud", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let service = try Child.syncService(in: directory, users: ["owner", "small"])
        defer { service.stop() }

        let total = quick ? 8_000 : 100_000
        print("sync-service — records.modify of 400 records vs raw SQLite inserts of the same rows (WAL, synchronous=FULL)")
        let owner = try Session(socket: service.socket, credential: "owner-secret")
        try owner.createZone()
        let batches = stride(from: 0, to: total, by: 400).map { start in
            (start..<min(start + 400, total)).map { record(name: "E\($0)", value: $0) }.joined(separator: ",")
        }
        let cpuBefore = try service.cpuSeconds()
        let started = now()
        for batch in batches { try owner.modify(batch, policy: nil) }
        let serviceRate = Double(total) / (Double(now() - started) / 1e9)
        let saveCPU = try service.cpuSeconds() - cpuBefore
        let rawRate = try rawSQLiteRate(directory: directory, total: total)
        let widths = [34, 14, 16, 24]
        print(row(["", "raw SQLite", "sync-service", "ratio (target)"], widths: widths))
        print(row(["records/s (\(total) in 400s)", format(rawRate, 0), format(serviceRate, 0), format(serviceRate / rawRate, 2) + " (≥ 0.25)"], widths: widths))
        print(row(["  service CPU/record saved: µs", "", format(saveCPU / Double(total) * 1e6)], widths: widths))
        Figures.run.add("cloud.modify", serviceRate, baseline: rawRate, unit: "records/s")
        Figures.run.add("cloud.modify.cpuPerRecord", saveCPU / Double(total) * 1e6, baseline: nil, unit: "µs")

        let fetchCPUBefore = try service.cpuSeconds()
        let fetchStarted = now()
        let fetched = try owner.fetchAll()
        let fetchSeconds = Double(now() - fetchStarted) / 1e9
        let fetchCPU = try service.cpuSeconds() - fetchCPUBefore
        guard fetched == total else { throw BenchError("fetched \(fetched) records, expected \(total)") }
        print(row(["fetch all, pages of 1000: rec/s", "", format(Double(total) / fetchSeconds, 0)], widths: widths))
        print(row(["  service CPU/record fetched: µs", "", format(fetchCPU / Double(total) * 1e6)], widths: widths))
        Figures.run.add("cloud.fetchAll", Double(total) / fetchSeconds, baseline: nil, unit: "records/s")
        Figures.run.add("cloud.fetchAll.cpuPerRecord", fetchCPU / Double(total) * 1e6, baseline: nil, unit: "µs")

        // Fetch cost: 1 change on top of a zone of `total` records vs a zone of 100.
        let small = try Session(socket: service.socket, credential: "small-secret")
        try small.createZone()
        try small.modify((0..<100).map { record(name: "S\($0)", value: $0) })
        let iterations = quick ? 50 : 300
        let big = try fetchOneChange(owner, iterations: iterations)
        let little = try fetchOneChange(small, iterations: iterations)
        print(row(["fetch 1 change: p50 µs", "zone of 100", "zone of \(total)", "ratio"], widths: widths))
        print(row(["", format(little), format(big), format(big / little, 2) + "× (target ≤ 2×)"], widths: widths))
        Figures.run.add("cloud.fetchOneChange", big, baseline: little, unit: "µs")
        print("")
    }

    static func record(name: String, value: Int) -> String {
        #"{"recordName":"\#(name)","zoneID":{"zoneName":"\#(zone)"},"recordType":"CD_CareEvent","fields":{"CD_id":{"type":"string","value":"\#(name)"},"CD_eventTypeRaw":{"type":"string","value":"bloodGlucose"},"CD_value":{"type":"double","value":\#(value)},"CD_occurredAt":{"type":"date","value":1780000000},"CD_note":{"type":"string","value":"before breakfast"}}}"#
    }

    /// One user's connection, requests pre-encoded as frames.
    final class Session {
        let client: RawClient
        init(socket: String, credential: String) throws {
            client = try RawClient(socket: socket)
            try client.send(FrameEncoder.frame(Array(#"{"id":0,"op":"hello","params":{"minVersion":1,"maxVersion":1,"client":"meow-bench","credential":"\#(credential)"}}"#.utf8)))
            _ = try client.receive()
        }
        @discardableResult
        func call(_ op: String, _ params: String) throws -> JSONValue { try client.call(op, params) }
        func createZone() throws {
            try call("zones.save", #"{"database":"private","zoneIDs":[{"zoneName":"\#(zone)"}]}"#)
        }
        func modify(_ records: [String]) throws {
            try modify(records.joined(separator: ","), policy: "allKeys")
        }
        /// `saves` is the records' JSON joined by commas; a nil policy is the server's default.
        func modify(_ saves: String, policy: String?) throws {
            let policyJSON = policy.map { #""savePolicy":"\#($0)","# } ?? ""
            try call("records.modify", #"{"database":"private","returnFields":false,\#(policyJSON)"saves":[\#(saves)]}"#)
        }
        /// Every live record of the zone from nil, in pages of 1,000; returns how many.
        func fetchAll() throws -> Int {
            var since = "null"
            var count = 0
            while true {
                // Parsed with the services' one-pass parser: JSONDecoder here would time the client.
                try client.send(FrameEncoder.frame(Array(#"{"id":1,"op":"changes.fetchZone","params":{"database":"private","zoneID":{"zoneName":"\#(zone)"},"since":\#(since),"limit":1000}}"#.utf8)))
                let reply = try JSONParser.parse(try client.receive())
                guard reply["ok"] == true, let page = reply["result"] else { throw BenchError("changes.fetchZone failed: \(reply)") }
                count += page["changed"]?.arrayValue?.count ?? 0
                guard let token = page["token"]?.stringValue else { throw BenchError("no token") }
                if page["moreComing"] != true { return count }
                since = "\"\(token)\""
            }
        }
        func token() throws -> String {
            var since = "null"
            while true {
                let page = try call("changes.fetchZone", #"{"database":"private","zoneID":{"zoneName":"\#(zone)"},"since":\#(since),"limit":10000}"#)
                guard let token = page["token"]?.stringValue else { throw BenchError("no token") }
                if page["moreComing"] != true { return token }
                since = "\"\(token)\""
            }
        }
    }

    /// p50 of fetching exactly one new change since a fresh token.
    static func fetchOneChange(_ session: Session, iterations: Int) throws -> Double {
        var token = try session.token()
        var latencies = Latencies()
        for iteration in 0..<iterations {
            try session.modify([record(name: "Hot", value: iteration)])
            let t0 = now()
            let page = try session.call("changes.fetchZone", #"{"database":"private","zoneID":{"zoneName":"\#(zone)"},"since":"\#(token)"}"#)
            latencies.add(now() - t0)
            guard page["changed"]?.arrayValue?.count == 1, let next = page["token"]?.stringValue else {
                throw BenchError("expected exactly one change, got \(page)")
            }
            token = next
        }
        return latencies.percentile(0.5)
    }

    /// The same rows straight into SQLite: name, zone, type, fields JSON; 400 per transaction.
    static func rawSQLiteRate(directory: String, total: Int) throws -> Double {
        let db = try Database(path: directory + "/raw.sqlite")
        try db.execute("CREATE TABLE records(zone TEXT, name TEXT, type TEXT, tag INTEGER, fields BLOB, PRIMARY KEY(zone, name))")
        let insert = try db.prepare("INSERT INTO records(zone, name, type, tag, fields) VALUES (?, ?, ?, ?, ?)")
        let started = now()
        var index = 0
        while index < total {
            let end = min(index + 400, total)
            try db.transaction {
                for i in index..<end {
                    try insert.run([zone, "E\(i)", "CD_CareEvent", i, Array(record(name: "E\(i)", value: i).utf8)])
                }
            }
            index = end
        }
        return Double(total) / (Double(now() - started) / 1e9)
    }
}

extension Child {
    /// CPU seconds (user + system, every thread) the child has used so far, from /proc.
    func cpuSeconds() throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)
        // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
        guard let close = stat.lastIndex(of: ")") else { throw BenchError("unreadable /proc stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { throw BenchError("unreadable /proc stat") }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
