#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import SQLiteKit

/// store-service: saves of 1,000 CareEvents per save over the socket beside raw prepared SQLite
/// inserts of the same rows with the same durability; a sorted fetch of 10,000 events of one
/// session beside the raw SQL query; the orphan repair of 100,000 orphans beside the raw UPDATE;
/// the service's peak RSS while a client pages through every event.
enum StoreBenchmark {
    static func run(_ quick: Bool) throws {
        let directory = NSTemporaryDirectory() + "mb-store-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let service = try Child("store-service", ["--socket", directory + "/store.sock", "--data-dir", directory + "/data",
                                                  "--log-level", "warning", "--no-orphan-repair"], socket: directory + "/store.sock")
        defer { service.stop() }
        let session = try StoreSession(socket: service.socket)
        let raw = try RawStore(path: directory + "/raw.sqlite")
        let widths = [44, 14, 16, 32]
        print("store-service — beside raw SQLite doing the same work in the same run (WAL, synchronous=FULL)")
        print(row(["", "raw SQLite", "store-service", "ratio (target)"], widths: widths))

        // 1. Saves of 1,000 CareEvents per save, into one session.
        let saves = quick ? 10 : 50
        let sessionID = try session.insertSession(id: "bench")
        let requests = (0..<saves).map { session.insertParams(batch: $0, count: 1000, session: sessionID) }
        let rawBatches = (0..<saves).map { RawStore.rows(batch: $0, count: 1000, session: 1) }
        let randomKeyBatches = (0..<saves).map { RawStore.rows(batch: $0, count: 1000, session: 1, randomKeys: true) }
        let randomKeyRaw = try RawStore(path: directory + "/raw-random.sqlite")
        var started = now()
        for request in requests { try session.save(request) }
        let serviceSaveRate = Double(saves * 1000) / (Double(now() - started) / 1e9)
        started = now()
        for rows in rawBatches { try raw.insert(rows) }
        let rawSaveRate = Double(saves * 1000) / (Double(now() - started) / 1e9)
        started = now()
        for rows in randomKeyBatches { try randomKeyRaw.insert(rows) }
        let randomKeyRate = Double(saves * 1000) / (Double(now() - started) / 1e9)
        print(row(["saves of 1,000 events: events/s", format(rawSaveRate, 0), format(serviceSaveRate, 0),
                   format(serviceSaveRate / rawSaveRate, 2) + " (≥ 0.5)"], widths: widths))
        // The raw side with random (version 4) uuids, as Core Data makes them and as the service
        // made them before its keys were time-ordered: what the target was first measured against.
        print(row(["  raw side with random uuids: events/s", format(randomKeyRate, 0), "",
                   format(serviceSaveRate / randomKeyRate, 2)], widths: widths))
        Figures.run.add("store.save", serviceSaveRate, baseline: rawSaveRate, unit: "events/s")
        Figures.run.add("store.save.randomKeyBaseline", serviceSaveRate, baseline: randomKeyRate, unit: "events/s")

        // 2. Fetch 10,000 events of one session sorted by time.
        let fetchRuns = quick ? 3 : 10
        var serviceFetch = Latencies(), rawFetch = Latencies()
        let checked = try session.fetchSorted(limit: 10_000, session: sessionID, check: true)
        guard checked == 10_000, try raw.fetchSorted(limit: 10_000) == 10_000 else { throw BenchError("expected 10,000 rows, got \(checked)") }
        for _ in 0..<fetchRuns {
            // Timed to the reply's last byte: the client's own JSON parsing is not the service's cost.
            var t0 = now()
            _ = try session.fetchSorted(limit: 10_000, session: sessionID, check: false)
            serviceFetch.add(now() - t0)
            t0 = now()
            _ = try raw.fetchSorted(limit: 10_000)
            rawFetch.add(now() - t0)
        }
        print(row(["fetch 10,000 events sorted by time: ms", format(rawFetch.percentile(0.5) / 1000, 2),
                   format(serviceFetch.percentile(0.5) / 1000, 2), format(serviceFetch.percentile(0.5) / rawFetch.percentile(0.5), 1) + "× (≤ 2×)"], widths: widths))
        Figures.run.add("store.fetchSorted", serviceFetch.percentile(0.5) / 1000, baseline: rawFetch.percentile(0.5) / 1000, unit: "ms")

        // 3. The orphan repair of many orphans (events saved with no session).
        let orphans = quick ? 20_000 : 100_000
        for batch in 0..<(orphans / 1000) { try session.saveEvents(batch: 100_000 + batch, count: 1000, session: nil) }
        for batch in 0..<(orphans / 1000) { try raw.insertEvents(batch: 100_000 + batch, count: 1000, session: nil) }
        started = now()
        let attached = try session.repairOrphans()
        let serviceRepair = Double(now() - started) / 1e6
        started = now()
        try raw.repairOrphans()
        let rawRepair = Double(now() - started) / 1e6
        guard attached == orphans else { throw BenchError("repair attached \(attached) of \(orphans)") }
        print(row(["orphan repair of \(orphans) orphans: ms", format(rawRepair, 1), format(serviceRepair, 1),
                   format(serviceRepair / rawRepair, 1) + "× (≤ 1.5×)"], widths: widths))
        Figures.run.add("store.orphanRepair", serviceRepair, baseline: rawRepair, unit: "ms")

        // 4. Peak RSS while a client pages through every event (keyset paging, 1,000 a page).
        let target = quick ? 200_000 : 1_000_000
        let have = saves * 1000 + orphans
        for batch in 0..<max(0, (target - have) / 1000) { try session.saveEvents(batch: 200_000 + batch, count: 1000, session: sessionID) }
        let before = residentMiB(pid: service.process.processIdentifier, field: "VmRSS")
        let paged = try session.pageThroughAll()
        let peak = residentMiB(pid: service.process.processIdentifier, field: "VmHWM")
        print(row(["peak RSS paging \(paged) events: MiB", "", format(peak, 1), "(≤ 150; \(format(before, 1)) before paging)"], widths: widths))
        Figures.run.add("store.pagingPeakRSS", peak, baseline: nil, unit: "MiB")
        print("")
    }

    static func residentMiB(pid: Int32, field: String) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return -1 }
        return kb / 1024
    }
}

/// One connection to the store-service, requests pre-encoded, replies parsed only where needed.
final class StoreSession {
    let client: RawClient
    var context = ""

    init(socket: String) throws {
        client = try RawClient(socket: socket)
        try client.hello()
        context = try call("context.open", #"{"name":"bench"}"#)["context"]?.stringValue ?? ""
    }

    @discardableResult
    func call(_ op: String, _ params: String) throws -> JSONValue { try client.call(op, params) }

    func insertSession(id: String) throws -> String {
        try call("object.insert", #"{"context":"\#(context)","entity":"CareSession","values":{"id":"\#(id)","title":"Bench","isDefault":false}}"#)
        let saved = try call("context.save", #"{"context":"\#(context)"}"#)
        return saved["inserted"]?.arrayValue?.first?["objectID"]?.stringValue ?? ""
    }

    /// The object.insert params for one batch (built before timing: generating test data is
    /// not the service's cost).
    func insertParams(batch: Int, count: Int, session: String?) -> String {
        var objects: [String] = []
        objects.reserveCapacity(count)
        for index in 0..<count {
            let n = batch * count + index
            let sessionValue = session.map { #","session":"\#($0)""# } ?? ""
            objects.append(#"{"entity":"CareEvent","values":{"id":"e\#(n)","eventTypeRaw":"bloodGlucose","occurredAt":"\#(RawStore.timestamp(n))","updatedAt":"\#(RawStore.timestamp(n))","value":\#(100 + n % 200),"note":"before breakfast"\#(sessionValue)}}"#)
        }
        return #"{"context":"\#(context)","returnObjectIDs":false,"objects":[\#(objects.joined(separator: ","))]}"#
    }

    /// Inserts and saves one prepared batch (then resets the context, as a bulk importer would).
    func save(_ insertParams: String) throws {
        try call("object.insert", insertParams)
        try call("context.save", #"{"context":"\#(context)","report":"summary"}"#)
        try call("context.reset", #"{"context":"\#(context)"}"#)
    }

    func saveEvents(batch: Int, count: Int, session: String?) throws {
        try save(insertParams(batch: batch, count: count, session: session))
    }

    /// The events of one session (by its object ID: the query the raw side runs, `session = 1`,
    /// rather than a join on the session's non-unique `id`), sorted by time. With `check`,
    /// parses the reply and returns the row count; otherwise only receives it.
    func fetchSorted(limit: Int, session: String, check: Bool) throws -> Int {
        let params = #"{"entity":"CareEvent","predicate":"session == %@","arguments":["\#(session)"],"sortDescriptors":[{"key":"occurredAt","ascending":true}],"limit":\#(limit),"resultFormat":"rows"}"#
        if check { return try call("fetch", params)["rows"]?.arrayValue?.count ?? -1 }
        try client.send(FrameEncoder.frame(Array(#"{"id":0,"op":"fetch","params":\#(params)}"#.utf8)))
        return try client.receive().count
    }

    func repairOrphans() throws -> Int {
        try call("repair.orphans", "{}")["attached"]?.intValue ?? -1
    }

    /// Keyset paging (occurredAt > last) so each page costs the same; returns the events seen.
    func pageThroughAll() throws -> Int {
        var last = "1970-01-01T00:00:00Z"
        var seen = 0
        while true {
            let page = try call("fetch", #"{"entity":"CareEvent","predicate":"occurredAt > %@","arguments":["\#(last)"],"sortDescriptors":[{"key":"occurredAt","ascending":true}],"limit":1000,"resultFormat":"rows"}"#)
            guard let rows = page["rows"]?.arrayValue, !rows.isEmpty,
                  let column = page["columns"]?.arrayValue?.firstIndex(of: "occurredAt"),
                  let next = rows.last?.arrayValue?[column].stringValue else { return seen }
            seen += rows.count
            last = next
        }
    }
}

/// The same rows with the same durability in the table layout the service gives CareEvent: the
/// model's two indexes and the unique uuid (the record name) — what any SQLite app storing
/// these rows with these lookups would maintain. The service's own extras (the history row
/// of every change, routing, validation, the wire) are what the ratio measures.
final class RawStore {
    let db: Database
    let insert: Statement

    init(path: String) throws {
        db = try Database(path: path)
        try db.execute("""
            CREATE TABLE event(pk INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, id TEXT, eventTypeRaw TEXT, occurredAt TEXT,
                               updatedAt TEXT, value REAL, note TEXT, session INTEGER, version INTEGER);
            CREATE INDEX event_session_time ON event(session, occurredAt);
            CREATE INDEX event_time ON event(occurredAt);
            """)
        insert = try db.prepare("INSERT INTO event(uuid, id, eventTypeRaw, occurredAt, updatedAt, value, note, session, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)")
    }

    static func timestamp(_ n: Int) -> String {
        let seconds = 1_780_000_000 + n * 60
        return Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// One batch's rows, values ready to bind (built before timing, as the service's are).
    static func rows(batch: Int, count: Int, session: Int?, randomKeys: Bool = false) -> [[any SQLBindable]] {
        (0..<count).map { index in
            let n = batch * count + index
            let time = timestamp(n)
            return [randomKeys ? UUID().uuidString : timeOrderedUUID(n), "e\(n)", "bloodGlucose", time, time, Double(100 + n % 200), "before breakfast", session]
        }
    }

    /// A uuid ordered by `n` as the store's are (RFC 9562 version 7: time first, then random
    /// bits), so both sides' uuid indexes grow the same way: random ones would price the raw
    /// side's index pages, not the service's work.
    static func timeOrderedUUID(_ n: Int) -> String {
        let time = String(1_780_000_000_000 + n, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 12 - time.count)) + time
        return padded.prefix(8) + "-" + padded.suffix(4) + "-7" + UUID().uuidString.dropFirst(15)
    }

    /// Inserts one batch in one transaction.
    func insert(_ rows: [[any SQLBindable]]) throws {
        try db.transaction { for row in rows { try insert.run(row) } }
    }

    func insertEvents(batch: Int, count: Int, session: Int?) throws {
        try insert(Self.rows(batch: batch, count: count, session: session))
    }

    func fetchSorted(limit: Int) throws -> Int {
        try db.query("SELECT pk, uuid, id, eventTypeRaw, occurredAt, updatedAt, value, note, session, version FROM event WHERE session = 1 ORDER BY occurredAt LIMIT ?", [limit]).count
    }

    func repairOrphans() throws {
        try db.transaction { try db.execute("UPDATE event SET session = ?, version = version + 1 WHERE session IS NULL", [1]) }
    }
}
