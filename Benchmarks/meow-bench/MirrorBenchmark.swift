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
        let cloud = try Child.syncService(in: directory, users: ["big", "small"])
        defer { cloud.stop() }
        func device(_ name: String, _ credential: String) throws -> Child {
            try Child("store-service", ["--socket", "\(directory)/\(name).sock", "--data-dir", "\(directory)/\(name)",
                                        "--sync-socket", directory + "/sync.sock", "--sync-credential", credential,
                                        "--device-name", name, "--no-orphan-repair", "--log-level", "warning"],
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

        // 2. One change on top of many synced records vs on top of few.
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
