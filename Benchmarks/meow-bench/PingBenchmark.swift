import Foundation
import MeowWire

/// Ping round trips through a real service beside a raw C echo server with the same framing:
/// 1 client sequential, 8 clients, and pipelined on one connection.
enum PingBenchmark {
    static func run(_ quick: Bool) throws {
        let directory = NSTemporaryDirectory() + "mb-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let echo = try Child("echo-baseline", [directory + "/echo.sock"], socket: directory + "/echo.sock")
        defer { echo.stop() }
        let service = try Child("store-service", ["--socket", directory + "/store.sock", "--in-memory", "--log-level", "warning"],
                                socket: directory + "/store.sock")
        defer { service.stop() }

        let sequential = quick ? 5_000 : 40_000
        let pipelined = quick ? 50_000 : 400_000
        print("ping — store-service vs the C echo baseline (same framing, same socket kind, same run)")
        let widths = [34, 12, 12, 12, 12]
        print(row(["scenario", "echo", "service", "ratio", "target"], widths: widths))

        let echoOne = try sequentialRun(socket: echo.socket, clients: 1, total: sequential)
        let serviceOne = try sequentialRun(socket: service.socket, clients: 1, total: sequential)
        print(row(["1 client: p50 µs", format(echoOne.p50), format(serviceOne.p50), format(serviceOne.p50 / echoOne.p50, 2) + "×", "≤ 3×"], widths: widths))
        print(row(["1 client: p99 µs", format(echoOne.p99), format(serviceOne.p99), format(serviceOne.p99 / echoOne.p99, 2) + "×", ""], widths: widths))
        print(row(["1 client: round trips/s", format(echoOne.rate, 0), format(serviceOne.rate, 0), format(serviceOne.rate / echoOne.rate, 2), "≥ 25000"], widths: widths))
        report("ping.oneClient", service: serviceOne, echo: echoOne)

        let echoEight = try sequentialRun(socket: echo.socket, clients: 8, total: sequential * 2)
        let serviceEight = try sequentialRun(socket: service.socket, clients: 8, total: sequential * 2)
        print(row(["8 clients: p50 µs", format(echoEight.p50), format(serviceEight.p50), format(serviceEight.p50 / echoEight.p50, 2) + "×", ""], widths: widths))
        print(row(["8 clients: p99 µs", format(echoEight.p99), format(serviceEight.p99), format(serviceEight.p99 / echoEight.p99, 2) + "×", ""], widths: widths))
        print(row(["8 clients: round trips/s", format(echoEight.rate, 0), format(serviceEight.rate, 0), format(serviceEight.rate / echoEight.rate, 2), ""], widths: widths))
        report("ping.eightClients", service: serviceEight, echo: echoEight)

        let echoPipe = try pipelinedRun(socket: echo.socket, total: pipelined)
        let servicePipe = try pipelinedRun(socket: service.socket, total: pipelined)
        print(row(["pipelined, 1 connection: req/s", format(echoPipe, 0), format(servicePipe, 0), format(servicePipe / echoPipe, 2), "≥ 100000"], widths: widths))
        Figures.run.add("ping.pipelined", servicePipe, baseline: echoPipe, unit: "requests/s")
        print("")
    }

    /// A sequential run's figures: round trips/s under `key`, its latencies under `key.p50`, `key.p99`.
    static func report(_ key: String, service: Result, echo: Result) {
        Figures.run.add(key, service.rate, baseline: echo.rate, unit: "round trips/s")
        Figures.run.add(key + ".p50", service.p50, baseline: echo.p50, unit: "µs")
        Figures.run.add(key + ".p99", service.p99, baseline: echo.p99, unit: "µs")
    }

    struct Result { var p50: Double; var p99: Double; var rate: Double }

    static func request(_ id: Int) -> [UInt8] {
        FrameEncoder.frame(Array(#"{"id":\#(id),"op":"ping"}"#.utf8))
    }

    /// `clients` threads, each doing sequential round trips; latencies per round trip.
    static func sequentialRun(socket: String, clients: Int, total: Int) throws -> Result {
        let perClient = total / clients
        let collector = Collector()
        let group = DispatchGroup()
        let start = now()
        for _ in 0..<clients {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                do {
                    let client = try RawClient(socket: socket)
                    try client.hello()
                    var local = Latencies()
                    local.samples.reserveCapacity(perClient)
                    for index in 0..<perClient {
                        let frame = request(index)
                        let t0 = now()
                        try client.send(frame)
                        _ = try client.receive()
                        local.add(now() - t0)
                    }
                    collector.add(local)
                } catch {
                    collector.fail(error)
                }
            }
            thread.start()
        }
        group.wait()
        if let failure = collector.failure { throw BenchError(failure) }
        let all = collector.latencies
        let seconds = Double(now() - start) / 1e9
        return Result(p50: all.percentile(0.5), p99: all.percentile(0.99), rate: Double(perClient * clients) / seconds)
    }

    /// One connection; a writer keeps up to 512 requests in flight; requests/s.
    static func pipelinedRun(socket: String, total: Int) throws -> Double {
        let client = try RawClient(socket: socket)
        try client.hello()
        let window = DispatchSemaphore(value: 512)
        let batch = 32
        let start = now()
        let writer = Thread {
            var index = 0
            while index < total {
                var bytes: [UInt8] = []
                let count = min(batch, total - index)
                for offset in 0..<count {
                    window.wait()
                    bytes += request(index + offset)
                }
                try? client.send(bytes)
                index += count
            }
        }
        writer.start()
        for _ in 0..<total {
            _ = try client.receive()
            window.signal()
        }
        return Double(total) / (Double(now() - start) / 1e9)
    }
}
