#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import Synchronization

/// Load and soak: K concurrent clients on two devices (A and B, one user) mirroring to one
/// sync-service, each running a seeded mix — saves of new events, sorted fetches, counts, history
/// reads, edits of one hot session every client fights over (the `error` merge policy, so
/// `mergeConflict` is an expected answer), and sync.send/sync.fetch — for a bounded time
/// (`--seconds N`) or a fixed number of operations per client (`--operations N`, what the
/// test runs). Reports throughput, p50/p99 per operation, errors by code, whether every client
/// finished, each service's RSS over time, and whether both devices converge afterwards on
/// exactly the acknowledged events.
///
///     meow-bench load [--seconds N | --operations N] [--clients K] [--seed S] [--dir DIR] [--json]
enum LoadBenchmark {
    /// Codes the mix may meet and still be healthy; anything else is counted as unexpected.
    static let expectedCodes: Set<String> = ["mergeConflict"]

    struct Options {
        var seconds: Double?
        var operations: Int?
        var clients = 8
        var seed: UInt64 = 0x4C4F_4144   // "LOAD"
        var directory: String?
        var json = false

        init(_ arguments: [String], quick: Bool) throws {
            var index = 0
            func value(_ name: String) throws -> String {
                index += 1
                guard index < arguments.count else { throw BenchError("\(name) needs a value") }
                return arguments[index]
            }
            while index < arguments.count {
                switch arguments[index] {
                case "--seconds": seconds = Double(try value("--seconds"))
                case "--operations": operations = Int(try value("--operations"))
                case "--clients": clients = Int(try value("--clients")) ?? 0
                case "--seed": seed = UInt64(try value("--seed")) ?? seed
                case "--dir": directory = try value("--dir")
                case "--json": json = true
                default: break
                }
                index += 1
            }
            guard clients >= 1 else { throw BenchError("--clients must be at least 1") }
            if seconds == nil && operations == nil { seconds = quick ? 5 : 20 }
        }
    }

    enum Kind: String, CaseIterable {
        case save, fetch, count, history, hotEdit, syncSend, syncFetch
    }

    /// Everything the client threads report.
    final class Tally: Sendable {
        struct State {
            var latencies: [Kind: Latencies] = [:]
            var errors: [String: Int] = [:]
            var acknowledgedEvents: [String: Int] = ["A": 0, "B": 0]
            var operations = 0
            var finished = 0
        }
        let state = Mutex(State())
        func record(_ kind: Kind, nanoseconds: UInt64, error: String?) {
            state.withLock { state in
                state.latencies[kind, default: Latencies()].add(nanoseconds)
                state.operations += 1
                if let error { state.errors[error, default: 0] += 1 }
            }
        }
        func acknowledged(_ events: Int, on device: String) { state.withLock { $0.acknowledgedEvents[device, default: 0] += events } }
        func finished() { state.withLock { $0.finished += 1 } }
    }

    /// A device connection that answers an error reply with its code instead of throwing.
    final class Connection {
        let client: RawClient
        let device: String
        private var nextID = 0

        init(socket: String, device: String) throws {
            client = try RawClient(socket: socket)
            self.device = device
            try client.hello()
        }

        /// The reply's result, or its error code.
        func request(_ op: String, _ params: String) throws -> Result<JSONValue, LoadError> {
            nextID += 1
            try client.send(FrameEncoder.frame(Array(#"{"id":\#(nextID),"op":"\#(op)","params":\#(params)}"#.utf8)))
            let reply = try JSONParser.parse(try client.receive())
            if reply["ok"] == true { return .success(reply["result"] ?? .null) }
            return .failure(LoadError(code: reply["error"]?["code"]?.stringValue ?? "malformedReply"))
        }

        func call(_ op: String, _ params: String) throws -> JSONValue {
            switch try request(op, params) {
            case let .success(result): return result
            case let .failure(error): throw BenchError("\(op) on \(device): \(error.code)")
            }
        }
    }

    struct LoadError: Error { let code: String }

    static func run(_ quick: Bool) throws {
        let options = try Options(Array(CommandLine.arguments.dropFirst()), quick: quick)
        let directory = options.directory ?? NSTemporaryDirectory() + "mb-load-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if options.directory == nil { try? FileManager.default.removeItem(atPath: directory) } }
        let cloud = try Child.syncService(in: directory, users: ["load"])
        defer { cloud.stop() }
        func device(_ name: String) throws -> Child {
            try Child("store-service", ["--socket", "\(directory)/\(name).sock", "--data-dir", "\(directory)/\(name)",
                                        "--sync-socket", directory + "/sync.sock", "--sync-credential", "load-secret",
                                        "--device-name", name, "--no-orphan-repair", "--log-level", "warning"],
                      socket: "\(directory)/\(name).sock")
        }
        let devices = ["A": try device("A"), "B": try device("B")]
        defer { devices.values.forEach { $0.stop() } }

        // The hot session: made on A, known to B before the clock starts.
        let setupA = try Connection(socket: devices["A"]!.socket, device: "A")
        let setupB = try Connection(socket: devices["B"]!.socket, device: "B")
        let context = try setupA.call("context.open", "{}")["context"]?.stringValue ?? ""
        _ = try setupA.call("object.insert", #"{"context":"\#(context)","entity":"CareSession","values":{"id":"hot","title":"hot","isDefault":false}}"#)
        _ = try setupA.call("context.save", #"{"context":"\#(context)","report":"summary"}"#)
        _ = try setupA.call("sync.send", "{}")
        _ = try setupB.call("sync.fetch", "{}")

        let services = [("sync-service", cloud.process.processIdentifier), ("store A", devices["A"]!.process.processIdentifier),
                        ("store B", devices["B"]!.process.processIdentifier)]
        let sampler = RSSSampler(pids: services.map(\.1), interval: max(0.2, (options.seconds ?? 4) / 30))
        let tally = Tally()
        let started = now()
        let deadline = options.seconds.map { started + UInt64($0 * 1e9) }
        let done = DispatchGroup()
        for index in 0..<options.clients {
            let name = index % 2 == 0 ? "A" : "B"
            let socket = devices[name]!.socket
            done.enter()
            let thread = Thread {
                defer { tally.finished(); done.leave() }
                do {
                    try runClient(index, device: name, socket: socket, options: options, deadline: deadline, tally: tally)
                } catch {
                    tally.state.withLock { $0.errors["clientFailed: \(error)", default: 0] += 1 }
                }
            }
            thread.start()
        }
        // No deadlock: every client must come back within the run plus a minute.
        let allowed = (options.seconds ?? 0) + 60 + Double(options.operations ?? 0) * Double(options.clients) * 0.5
        let joined = done.wait(timeout: .now() + allowed) == .success
        let elapsed = Double(now() - started) / 1e9
        let rss = sampler.stop()

        let state = tally.state.withLock { $0 }
        let acknowledged = state.acknowledgedEvents.values.reduce(0, +)
        let convergence = joined ? try converge(setupA, setupB, expected: acknowledged) : Convergence()
        let unexpected = state.errors.filter { !expectedCodes.contains($0.key) }.values.reduce(0, +)
        report(options: options, state: state, elapsed: elapsed, rss: rss, names: services.map(\.0),
               convergence: convergence, unexpected: unexpected)
        guard joined, state.finished == options.clients, unexpected == 0, convergence.converged else {
            throw BenchError("load run unhealthy: finished \(state.finished) of \(options.clients), unexpected errors \(unexpected), converged \(convergence.converged)")
        }
    }

    /// One client: its own seeded mix until the deadline or its operation count.
    static func runClient(_ index: Int, device: String, socket: String, options: Options, deadline: UInt64?, tally: Tally) throws {
        let connection = try Connection(socket: socket, device: device)
        var rng = LoadGenerator(state: options.seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
        let context = try connection.call("context.open", #"{"name":"load-\#(index)"}"#)["context"]?.stringValue ?? ""
        var historyCursor = 0
        var operation = 0
        while true {
            if let limit = options.operations, operation >= limit { break }
            if let deadline, now() >= deadline { break }
            operation += 1
            let roll = Int.random(in: 0..<100, using: &rng)
            let kind: Kind = roll < 40 ? .save : roll < 60 ? .fetch : roll < 65 ? .count : roll < 75 ? .history
                : roll < 85 ? .hotEdit : roll < 93 ? .syncSend : .syncFetch
            let t0 = now()
            var error: String?
            switch kind {
            case .save:
                let count = Int.random(in: 1...5, using: &rng)
                let objects = (0..<count).map { item in
                    #"{"entity":"CareEvent","values":{"id":"c\#(index)-\#(operation)-\#(item)","eventTypeRaw":"bloodGlucose","value":\#(100 + item),"occurredAt":"2026-11-30T08:\#(String(format: "%02d", operation % 60)):00Z","updatedAt":"2026-11-30T08:00:00Z"}}"#
                }
                if case let .failure(failure) = try connection.request("object.insert", #"{"context":"\#(context)","objects":[\#(objects.joined(separator: ","))],"returnObjectIDs":false}"#) {
                    error = failure.code
                } else if case let .failure(failure) = try connection.request("context.save", #"{"context":"\#(context)","report":"summary"}"#) {
                    error = failure.code
                    _ = try connection.request("context.rollback", #"{"context":"\#(context)"}"#)
                } else {
                    tally.acknowledged(count, on: device)
                    // A context keeps what it saved registered (as Core Data's does): let go of it,
                    // so memory measures the services, not one client's ever-growing context.
                    _ = try connection.request("context.reset", #"{"context":"\#(context)"}"#)
                }
            case .fetch:
                error = try connection.request("fetch", #"{"entity":"CareEvent","sortDescriptors":[{"key":"occurredAt","ascending":false}],"limit":20,"resultFormat":"rows"}"#).code
            case .count:
                error = try connection.request("fetch.count", #"{"entity":"CareEvent"}"#).code
            case .history:
                switch try connection.request("history.fetch", #"{"store":"Private","afterToken":\#(historyCursor),"limit":50}"#) {
                case let .success(result): historyCursor = result["lastTokens"]?["Private"]?.intValue ?? historyCursor
                case let .failure(failure): error = failure.code
                }
            case .hotEdit:
                error = try hotEdit(connection, title: "c\(index)-\(operation)")
            case .syncSend:
                error = try connection.request("sync.send", "{}").code
            case .syncFetch:
                error = try connection.request("sync.fetch", "{}").code
            }
            tally.record(kind, nanoseconds: now() - t0, error: error)
        }
    }

    /// Read the hot session into a fresh context, retitle it, save: another client's save in
    /// between answers mergeConflict.
    static func hotEdit(_ connection: Connection, title: String) throws -> String? {
        let context = try connection.call("context.open", #"{"name":"hot"}"#)["context"]?.stringValue ?? ""
        defer { _ = try? connection.request("context.close", #"{"context":"\#(context)"}"#) }
        let fetched = try connection.request("fetch", #"{"entity":"CareSession","predicate":"id == 'hot'","context":"\#(context)"}"#)
        guard case let .success(result) = fetched, let objectID = result["objects"]?.arrayValue?.first?["objectID"]?.stringValue else {
            return fetched.code ?? "hotSessionMissing"
        }
        if let code = try connection.request("object.set", #"{"context":"\#(context)","objectID":"\#(objectID)","values":{"title":"\#(title)"}}"#).code {
            return code
        }
        return try connection.request("context.save", #"{"context":"\#(context)","report":"summary"}"#).code
    }

    struct Convergence {
        var converged = false
        var eventsA = -1, eventsB = -1, rounds = 0
    }

    /// Send and fetch on both devices until both hold exactly the acknowledged events and the same
    /// hot title, and nothing is queued (at most 4 rounds).
    static func converge(_ a: Connection, _ b: Connection, expected: Int) throws -> Convergence {
        var result = Convergence()
        for round in 1...4 {
            for connection in [a, b, a] { _ = try connection.call("sync.now", "{}") }
            _ = try b.call("sync.fetch", "{}")
            result.rounds = round
            result.eventsA = try a.call("fetch.count", #"{"entity":"CareEvent"}"#)["count"]?.intValue ?? -1
            result.eventsB = try b.call("fetch.count", #"{"entity":"CareEvent"}"#)["count"]?.intValue ?? -1
            let titles = try [a, b].map { try $0.call("fetch", #"{"entity":"CareSession","predicate":"id == 'hot'"}"#)["objects"]?.arrayValue?.first?["values"]?["title"] }
            let quiet = try [a, b].allSatisfy { try $0.call("sync.status", "{}")["quiescent"] == true }
            if result.eventsA == expected && result.eventsB == expected && titles[0] == titles[1] && quiet {
                result.converged = true
                break
            }
        }
        return result
    }

    static func report(options: Options, state: Tally.State, elapsed: Double, rss: [RSSSampler.Samples], names: [String],
                       convergence: Convergence, unexpected: Int) {
        let acknowledged = state.acknowledgedEvents.values.reduce(0, +)
        let mode = options.operations.map { "\($0) operations per client" } ?? "\(format(options.seconds ?? 0, 0)) s"
        print("load — \(options.clients) clients on 2 devices mirroring to one sync-service, \(mode), seed \(options.seed)")
        let widths = [28, 12, 12, 12, 12]
        print(row(["operation", "count", "p50 ms", "p99 ms", "errors"], widths: widths))
        for kind in Kind.allCases {
            let latencies = state.latencies[kind] ?? Latencies()
            print(row([kind.rawValue, "\(latencies.samples.count)", format(latencies.percentile(0.5) / 1000, 2),
                       format(latencies.percentile(0.99) / 1000, 2), ""], widths: widths))
        }
        let all = state.latencies.values.reduce(into: Latencies()) { $0.merge($1) }
        print(row(["all", "\(state.operations)", format(all.percentile(0.5) / 1000, 2), format(all.percentile(0.99) / 1000, 2),
                   "\(state.errors.values.reduce(0, +))"], widths: widths))
        print("throughput: \(format(Double(state.operations) / elapsed, 0)) operations/s over \(format(elapsed, 1)) s; clients finished \(state.finished) of \(options.clients)")
        Figures.run.add("load.throughput", Double(state.operations) / elapsed, baseline: nil, unit: "operations/s")
        print("errors by code: \(state.errors.isEmpty ? "none" : state.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) (unexpected: \(unexpected))")
        print("acknowledged events \(acknowledged); afterwards A holds \(convergence.eventsA), B \(convergence.eventsB); converged: \(convergence.converged) (\(convergence.rounds) rounds)")
        for (name, samples) in zip(names, rss) {
            for (label, values) in [("RSS", samples.resident), ("anon", samples.anonymous)] {
                let middle = values.isEmpty ? 0 : values[values.count / 2]
                print("\(label) \(name) MiB: start \(format(values.first ?? 0)), middle \(format(middle)), end \(format(values.last ?? 0)), peak \(format(values.max() ?? 0)); second half \(signed((values.last ?? 0) - middle, 1)) (\(values.count) samples: \(sparkline(values)))")
            }
        }
        guard options.json else { print(""); return }
        var latency: [String: JSONValue] = [:]
        for kind in Kind.allCases {
            let samples = state.latencies[kind] ?? Latencies()
            latency[kind.rawValue] = ["count": .int(samples.samples.count), "p50Ms": .double(samples.percentile(0.5) / 1000),
                                      "p99Ms": .double(samples.percentile(0.99) / 1000)]
        }
        latency["all"] = ["count": .int(all.samples.count), "p50Ms": .double(all.percentile(0.5) / 1000), "p99Ms": .double(all.percentile(0.99) / 1000)]
        var memory: [String: JSONValue] = [:]
        func rounded(_ values: [Double]) -> JSONValue { .array(values.map { .double(($0 * 10).rounded() / 10) }) }
        for (name, samples) in zip(names, rss) { memory[name] = ["rss": rounded(samples.resident), "anon": rounded(samples.anonymous)] }
        let summary: JSONValue = [
            "suite": "load", "clients": .int(options.clients), "finished": .int(state.finished), "seconds": .double(elapsed),
            "operations": .int(state.operations), "throughput": .double(Double(state.operations) / elapsed),
            "latency": .object(latency), "errors": .object(state.errors.mapValues { .int($0) }), "unexpectedErrors": .int(unexpected),
            "acknowledgedEvents": .int(acknowledged), "eventsA": .int(convergence.eventsA), "eventsB": .int(convergence.eventsB),
            "converged": .bool(convergence.converged), "rssMiB": .object(memory),
        ]
        print("load-json: " + JSONWriter.text(summary))
    }

    static func signed(_ value: Double, _ digits: Int) -> String {
        (value >= 0 ? "+" : "") + String(format: "%.\(digits)f", value)
    }

    static func sparkline(_ samples: [Double]) -> String {
        guard let low = samples.min(), let high = samples.max(), high > low else { return String(repeating: "▁", count: min(samples.count, 30)) }
        let bars = Array("▁▂▃▄▅▆▇█")
        let step = max(1, samples.count / 30)
        return String(stride(from: 0, to: samples.count, by: step).map { bars[Int((samples[$0] - low) / (high - low) * 7)] })
    }
}

extension Result where Failure == LoadBenchmark.LoadError {
    /// The error code, or nil on success.
    var code: String? {
        if case let .failure(error) = self { return error.code }
        return nil
    }
}

/// Samples each process's VmRSS and RssAnon (MiB, from /proc/PID/status) on a thread of its
/// own: RssAnon is the heap (a leak shows there); VmRSS adds mapped files such as SQLite's WAL index.
final class RSSSampler: Sendable {
    struct Samples: Sendable {
        var resident: [Double] = []
        var anonymous: [Double] = []
    }
    private let samples: Mutex<[Samples]>
    private let running = Mutex(true)
    private let stopped = DispatchSemaphore(value: 0)

    init(pids: [pid_t], interval: Double) {
        samples = Mutex(Array(repeating: Samples(), count: pids.count))
        let thread = Thread { [self] in
            while running.withLock({ $0 }) {
                let now = pids.map { (Self.read("VmRSS:", of: $0), Self.read("RssAnon:", of: $0)) }
                samples.withLock { all in
                    for (index, value) in now.enumerated() {
                        all[index].resident.append(value.0)
                        all[index].anonymous.append(value.1)
                    }
                }
                usleep(UInt32(interval * 1e6))   // a sampling period, not a wait for anything
            }
            stopped.signal()
        }
        thread.start()
    }

    /// Stops sampling (after one last sample) and returns every process's samples.
    func stop() -> [Samples] {
        running.withLock { $0 = false }
        stopped.wait()
        return samples.withLock { $0 }
    }

    /// A "Name:   1234 kB" line of /proc/PID/status, in MiB (0 when unreadable).
    static func read(_ field: String, of pid: pid_t) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
              let kilobytes = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap({ Double($0) }) else { return 0 }
        return kilobytes / 1024
    }
}

/// Each client's mix repeats for a seed.
typealias LoadGenerator = SplitMix64
