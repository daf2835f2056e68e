import Foundation
import MeowWire

/// Mirroring: device A creates 10,000 CareEvents and device B receives them, end to end, beside
/// A's local batched-save rate measured in the same run; and the cost of sending and fetching one
/// change after 100,000 synced records beside the same after 100.
enum MirrorBenchmark {
    static func run(_ quick: Bool) throws {
        let directory = NSTemporaryDirectory() + "mb-mirror-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cloud = try Child.syncService(in: directory, users: ["big", "small", "live"])
        defer { cloud.stop() }
        func device(_ name: String, _ credential: String, mode: String = "manual") throws -> Child {
            try Child("store-service", ["--socket", "\(directory)/\(name).sock", "--data-dir", "\(directory)/\(name)",
                                        "--sync-socket", directory + "/sync.sock", "--sync-credential", credential,
                                        "--device-name", name, "--no-orphan-repair", "--log-level", "warning", "--sync-mode", mode],
                      socket: "\(directory)/\(name).sock")
        }
        let bigA = try device("big-a", "big-secret"), bigB = try device("big-b", "big-secret")
        let smallA = try device("small-a", "small-secret"), smallB = try device("small-b", "small-secret")
        defer { [bigA, bigB, smallA, smallB].forEach { $0.stop() } }
        let a = try StoreSession(socket: bigA.socket), b = try StoreSession(socket: bigB.socket)
        let widths = [44, 16, 16, 26]
        print("mirroring — store-service A → sync-service → store-service B")

        // 1. End to end beside the local batched-save rate.
        let events = quick ? 5_000 : 10_000
        let session = try a.insertSession(id: "bench")
        var started = now()
        for batch in 0..<(events / 1000) { try a.saveEvents(batch: batch, count: 1000, session: session) }
        let localRate = Double(events) / (Double(now() - started) / 1e9)
        let processes = [bigA, cloud, bigB]
        let cpuStart = try processes.map { try $0.cpuSeconds() }
        started = now()
        try a.call("sync.send", "{}")
        let sent = now()
        let cpuSent = try processes.map { try $0.cpuSeconds() }
        try b.call("sync.fetch", "{}")
        let endToEnd = Double(events) / (Double(now() - started) / 1e9)
        let cpuEnd = try processes.map { try $0.cpuSeconds() }
        // CPU per record on each side (user + system, every thread), to show where the time goes.
        func perRecord(_ from: [Double], _ to: [Double]) -> String {
            zip(from, to).map { format(($1 - $0) / Double(events) * 1e6, 0) }.joined(separator: " / ")
        }
        let received = try b.call("fetch.count", #"{"entity":"CareEvent"}"#)["count"]?.intValue ?? -1
        guard received == events else { throw BenchError("B received \(received) of \(events) events") }
        print(row(["", "local saves", "A → cloud → B", "ratio (target)"], widths: widths))
        print(row(["\(events) events: events/s", format(localRate, 0), format(endToEnd, 0),
                   format(endToEnd / localRate, 2) + " (≥ 0.33)"], widths: widths))
        print(row(["  of which send / fetch: s", "", format(Double(sent - started) / 1e9, 2) + " / " + format(Double(now() - sent) / 1e9, 2), ""], widths: widths))
        print(row(["  CPU/record A / cloud / B, send: µs", "", perRecord(cpuStart, cpuSent), ""], widths: widths))
        print(row(["  CPU/record A / cloud / B, fetch: µs", "", perRecord(cpuSent, cpuEnd), ""], widths: widths))

        // 2. The same with both devices in automatic mode, as an app runs: A sends as it saves,
        // B fetches as the cloud's pushes arrive, so the three processes work at once. Timed
        // from A's first save until B's remoteChange events have named every event.
        let liveA = try device("live-a", "live-secret", mode: "automatic"), liveB = try device("live-b", "live-secret", mode: "automatic")
        defer { [liveA, liveB].forEach { $0.stop() } }
        let la = try StoreSession(socket: liveA.socket), lb = try StoreSession(socket: liveB.socket)
        let watcher = try RawClient(socket: liveB.socket)
        try watcher.hello()
        try watcher.call("subscribe", #"{"topics":["remoteChange"]}"#)
        let liveSession = try la.insertSession(id: "bench")
        _ = try waitForEvents(watcher, entity: "CareSession", count: 1)
        let liveRequests = (0..<(events / 1000)).map { la.insertParams(batch: $0, count: 1000, session: liveSession) }
        started = now()
        for request in liveRequests { try la.save(request) }
        let liveSaved = now()
        _ = try waitForEvents(watcher, entity: "CareEvent", count: events)
        let live = Double(events) / (Double(now() - started) / 1e9)
        let liveReceived = try lb.call("fetch.count", #"{"entity":"CareEvent"}"#)["count"]?.intValue ?? -1
        guard liveReceived == events else { throw BenchError("live B received \(liveReceived) of \(events) events") }
        print(row(["automatic mode, first save → B has all: ev/s", "", format(live, 0), format(live / localRate, 2) + " (≥ 0.33)"], widths: widths))
        print(row(["  of which A's saves / the rest: s", "", format(Double(liveSaved - started) / 1e9, 2) + " / " + format(Double(now() - liveSaved) / 1e9, 2), ""], widths: widths))

        // 3. One change on top of many synced records vs on top of few.
        let many = quick ? 20_000 : 100_000
        for batch in 0..<((many - events) / 1000) { try a.saveEvents(batch: 1_000 + batch, count: 1000, session: session) }
        try a.call("sync.send", "{}")
        try b.call("sync.fetch", "{}")
        let sa = try StoreSession(socket: smallA.socket), sb = try StoreSession(socket: smallB.socket)
        let smallSession = try sa.insertSession(id: "bench")
        try sa.saveEvents(batch: 0, count: 100, session: smallSession)
        try sa.call("sync.send", "{}")
        try sb.call("sync.fetch", "{}")
        let iterations = quick ? 10 : 30
        let big = try oneChange(a, b, session: session, iterations: iterations)
        let small = try oneChange(sa, sb, session: smallSession, iterations: iterations)
        print(row(["1 change, send + fetch: p50 ms", "after 100", "after \(many)", "ratio (target ≤ 2×)"], widths: widths))
        print(row(["", format(small / 1000, 2), format(big / 1000, 2), format(big / small, 2) + "×"], widths: widths))
        print("")
    }

    /// Reads `remoteChange` events until they have named `count` distinct objects of `entity`.
    static func waitForEvents(_ watcher: RawClient, entity: String, count: Int) throws -> Int {
        var seen: Set<String> = []
        let marker = "/\(entity)/"
        while seen.count < count {
            let message = try JSONParser.parse(try watcher.receive())
            guard message["event"] == "remoteChange" else { continue }
            for id in message["data"]?["changedObjectIDs"]?.arrayValue ?? [] {
                if let id = id.stringValue, id.contains(marker) { seen.insert(id) }
            }
        }
        return seen.count
    }

    /// p50 of: A saves one event, sends it; B fetches it (saving on A is not timed).
    static func oneChange(_ a: StoreSession, _ b: StoreSession, session: String, iterations: Int) throws -> Double {
        var latencies = Latencies()
        for iteration in 0..<iterations {
            try a.saveEvents(batch: 9_000_000 + iteration, count: 1, session: session)
            let t0 = now()
            let sent = try a.call("sync.send", "{}")
            let fetched = try b.call("sync.fetch", "{}")
            latencies.add(now() - t0)
            guard sent["saved"]?.intValue == 1, fetched["changedRecords"]?.intValue == 1 else {
                throw BenchError("expected one record each way, sent \(sent), fetched \(fetched)")
            }
        }
        return latencies.percentile(0.5)
    }
}
