#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import Synchronization

/// A child process (service or baseline) for the length of a benchmark.
final class Child {
    let process = Process()
    let socket: String

    init(_ executable: String, _ arguments: [String], socket: String) throws {
        self.socket = socket
        process.executableURL = URL(fileURLWithPath: Self.binaryDirectory + "/" + executable)
        process.arguments = arguments
        // The services stop by themselves if the benchmark is killed (see ParentWatch).
        process.environment = ProcessInfo.processInfo.environment.merging(["MEOW_EXIT_WITH_PID": String(getpid())]) { _, new in new }
        // The service's log beside its socket (kept with --dir), for when a run fails.
        _ = FileManager.default.createFile(atPath: socket + ".log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: socket + ".log")
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        // Ready when a connection succeeds (bounded: 30 s).
        let deadline = Date().addingTimeInterval(30)
        while true {
            if let fd = try? UnixSocket.connect(path: socket) { close(fd); break }
            guard Date() < deadline, process.isRunning else { throw BenchError("\(executable) did not start") }
            usleep(2000)
        }
    }

    private var stopped = false

    func stop() {
        if stopped { return }
        stopped = true
        if !process.isRunning {
            // It ended by itself before the run was over: say how (the run's error says what failed).
            let how = process.terminationReason == .uncaughtSignal ? "signal" : "exit status"
            FileHandle.standardError.write(Data("meow-bench: \(process.executableURL?.lastPathComponent ?? "child") had already ended (\(how) \(process.terminationStatus)); its log: \(socket).log\n".utf8))
            return
        }
        process.terminate()
        process.waitUntilExit()
    }

    /// A sync-service on files in `directory` (socket `sync.sock`), with users named by their
    /// credentials `<user>-secret`.
    static func syncService(in directory: String, users: [String]) throws -> Child {
        let list = users.map { #"{"user":"\#($0)","credential":"\#($0)-secret"}"# }.joined(separator: ",")
        try #"{"users":[\#(list)]}"#.write(toFile: directory + "/users.json", atomically: true, encoding: .utf8)
        return try Child("sync-service", ["--socket", directory + "/sync.sock", "--data-dir", directory + "/cloud",
                                          "--users", directory + "/users.json", "--log-level", "warning"],
                         socket: directory + "/sync.sock")
    }

    static var binaryDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["MEOWCARE_BIN_DIR"] { return dir }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (exe as NSString).deletingLastPathComponent
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A raw client: frames in and out, no JSON decoding on the reply path, so the figures measure
/// the server side (and the same client code measures the baseline).
/// @unchecked Sendable: one thread writes while one other reads (the pipelined run); the decoder
/// and buffer are only touched by the reading thread.
final class RawClient: @unchecked Sendable {
    let fd: Int32
    private var decoder = FrameDecoder(maxFrameBytes: 1 << 30)
    private var buffer = [UInt8](repeating: 0, count: 256 * 1024)

    init(socket: String) throws {
        fd = try UnixSocket.connect(path: socket)
    }
    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        guard UnixSocket.writeAll(fd: fd, bytes) == .written else { throw BenchError("write failed") }
    }

    /// Blocks for the next frame body.
    func receive() throws -> [UInt8] {
        while true {
            if let frame = try decoder.nextFrame() { return frame }
            let n = buffer.withUnsafeMutableBytes { UnixSocket.read(fd: fd, into: $0) }
            guard n > 0 else { throw BenchError("connection closed") }
            decoder.append(buffer[0..<n])
        }
    }

    private var nextID = 1

    /// Sends one request whose params are already JSON text and returns its result; an error
    /// reply throws. Requests are built as text so the figures measure the service, not a client encoder.
    @discardableResult
    func call(_ op: String, _ params: String) throws -> JSONValue {
        nextID += 1
        try send(FrameEncoder.frame(Array(#"{"id":\#(nextID),"op":"\#(op)","params":\#(params)}"#.utf8)))
        let reply = try JSONParser.parse(try receive())
        guard reply["ok"] == true else { throw BenchError("\(op) failed: \(reply)") }
        return reply["result"] ?? .null
    }

    /// Sends hello (the baseline echo just echoes it back).
    func hello() throws {
        try send(FrameEncoder.frame(Array(#"{"id":0,"op":"hello","params":{"minVersion":1,"maxVersion":1,"client":"meow-bench"}}"#.utf8)))
        _ = try receive()
    }
}

/// Results gathered from several threads.
final class Collector: Sendable {
    private let state = Mutex<(latencies: Latencies, failure: String?)>((Latencies(), nil))
    func add(_ latencies: Latencies) { state.withLock { $0.latencies.merge(latencies) } }
    func fail(_ error: any Error) { state.withLock { $0.failure = "\(error)" } }
    var latencies: Latencies { state.withLock { $0.latencies } }
    var failure: String? { state.withLock { $0.failure } }
}

/// Latency samples → percentiles.
struct Latencies: Sendable {
    var samples: [UInt64] = []
    mutating func add(_ nanoseconds: UInt64) { samples.append(nanoseconds) }
    mutating func merge(_ other: Latencies) { samples += other.samples }
    func percentile(_ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
    }
}

@inline(__always) func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

/// One line of a result table.
/// Columns padded to their widths; a longer value is kept whole (truncating it hid the last
/// rounds of a nine-round ratio list) and pushes the rest of its line along.
func row(_ columns: [String], widths: [Int]) -> String {
    zip(columns, widths).map { $0.count >= $1 ? $0 : $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: " ")
}

/// The whole machine's CPU time from /proc/stat: busy and total jiffies over every core, so a
/// benchmark can say how busy the machine was while it timed (idle cores mean a pipeline stall,
/// busy ones that only less CPU per record makes it faster).
struct MachineCPU {
    var busy: Double, total: Double

    static func read() -> MachineCPU {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return MachineCPU(busy: 0, total: 0) }
        // user nice system idle iowait irq softirq steal …: idle and iowait are the idle part.
        let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        let total = values.prefix(8).reduce(0, +)
        let idle = values.count > 4 ? values[3] + values[4] : 0
        return MachineCPU(busy: total - idle, total: total)
    }

    /// Busy share of the cores between two readings, 0…1.
    static func busyShare(from start: MachineCPU, to end: MachineCPU) -> Double {
        let total = end.total - start.total
        return total > 0 ? (end.busy - start.busy) / total : 0
    }
}

/// How many cores' worth of work the machine gives two threads right now: the same fixed work
/// timed on one thread, then on two at once. On a shared VM the second core comes and goes
/// (the host runs other guests on it), and a pipeline of processes that needs two cores reads
/// slower beside a one-thread baseline when it does; the figure shows when that happened.
enum CoreCapacity {
    /// Fixed arithmetic (~10 ms on this machine): no memory traffic, no system calls.
    private static func spin() -> UInt64 {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<4_000_000 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        return state
    }

    private static func timed() -> Double {
        let start = now()
        blackHole(spin())
        return Double(now() - start) / 1e9
    }

    /// 2 when two threads each ran as fast as one alone, 1 when they shared one core.
    static func measure() -> Double {
        let alone = (0..<3).map { _ in timed() }.min() ?? 1
        let times = Mutex<[Double]>([])
        let done = DispatchGroup()
        for _ in 0..<2 {
            done.enter()
            Thread {
                let seconds = timed()
                times.withLock { $0.append(seconds) }
                done.leave()
            }.start()
        }
        done.wait()
        let slowest = times.withLock { $0.max() } ?? alone
        return min(2, 2 * alone / max(slowest, 1e-9))
    }

    @inline(never) private static func blackHole(_ value: UInt64) {
        if value == 42 { print("") }
    }
}
