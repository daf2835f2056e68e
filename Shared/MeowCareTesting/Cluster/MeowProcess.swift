#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CShim
import Foundation

/// A child process: a cluster's service, or any executable a test starts itself (a service
/// with arguments of its own, `meowctl`, a script). Its stderr is kept as lines and its stdout
/// as text, both also appended to `logPath` when there is one (what a failing test attaches).
/// Spawned with posix_spawn, so children never inherit a blocked signal mask. One thread for
/// every process (`ProcessWatcher`), blocked in poll on their pipes and pidfds, reads the output
/// and reaps each exit the moment it happens: a cluster's start pays no thread per service.
///
/// A process lives until it exits, referenced or not (its watching thread holds it): a
/// cluster stops its own at `stop()`, and every child gets `MEOW_EXIT_WITH_PID=<this process>`,
/// so it stops by itself once the test process has ended, even when that process was killed
/// and ran no clean-up.
///
/// ```swift
/// let cloud = try await MeowProcess.start("sync-service", ["--socket", "/tmp/x/c.sock", "--in-memory"])
/// let status = try await MeowProcess.run("meowctl", ["ping", "--socket", "/tmp/x/c.sock"]).status
/// await cloud.stop()
/// ```
public final class MeowProcess: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    public let name: String
    public let pid: pid_t
    /// The file stdout and stderr are appended to; nil when they are only kept in memory.
    public let logPath: String?
    private let condition = NSCondition()
    private var errorLines: [String] = []
    private var outputText = ""
    private var openPipes = 2
    private var status: Int32?
    /// Those waiting in `awaitLine(after:within:)`, resumed at the next stderr line or the end.
    private var lineWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextLineWaiter = 0

    /// Starts `executable` (a bare name is one of this package's executables, found by
    /// `ExecutableLocator`; a path is used as it is) with `environment` over this process's own;
    /// with `cpu`, it and its threads run on that CPU alone.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], name: String? = nil,
                logPath: String? = nil, cpu: Int? = nil) throws(MeowCareError) {
        let path = executable.contains("/") ? executable : "\(try ExecutableLocator.locate().directory)/\(executable)"
        let name = name ?? (executable as NSString).lastPathComponent
        self.name = name
        self.logPath = logPath
        var log: Int32 = -1
        if let logPath {
            log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard log >= 0 else {
                throw MeowCareError(.serviceDidNotStart, "Could not create \(name)'s log file \(logPath): \(String(cString: strerror(errno))).")
            }
        }
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        guard meow_pipe_cloexec(&outPipe) == 0, meow_pipe_cloexec(&errPipe) == 0 else {
            if log >= 0 { close(log) }
            throw MeowCareError(.serviceDidNotStart, "Could not start \(name): pipe2: \(String(cString: strerror(errno))).")
        }
        var overrides = environment
        if overrides["MEOW_EXIT_WITH_PID"] == nil { overrides["MEOW_EXIT_WITH_PID"] = String(getpid()) }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = Self.environmentBlock(overriding: overrides)
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let spawned = meow_spawn(path, argv, envp, outPipe[1], errPipe[1], Int32(cpu ?? -1))
        close(outPipe[1])
        close(errPipe[1])
        guard spawned > 0 else {
            let reason = String(cString: strerror(errno))
            [outPipe[0], errPipe[0]].forEach { close($0) }
            if log >= 0 { close(log) }
            throw MeowCareError(.serviceDidNotStart, "Could not start \(name) (\(path)): \(reason).")
        }
        pid = spawned
        let logFile = LogFile(descriptor: log)
        // A pidfd lets the output's thread see the exit too; where there is none (an old
        // kernel), a thread blocked in waitpid reaps instead.
        let exitDescriptor = meow_pidfd_open(spawned)
        if exitDescriptor < 0 {
            let reaper = Thread { [self] in
                var status: Int32 = 0
                while waitpid(spawned, &status, 0) < 0 && errno == EINTR {}
                exited(status)
            }
            reaper.name = "meowcare-reaper-\(name)"
            reaper.start()
        }
        ProcessWatcher.shared.watch(self, error: errPipe[0], output: outPipe[0], exit: exitDescriptor, log: logFile)
    }

    /// This process's environment with `overrides` set, as posix_spawn takes it: read from
    /// `environ` itself, as only the overridden variables need to be Swift strings.
    private static func environmentBlock(overriding overrides: [String: String]) -> [UnsafeMutablePointer<CChar>?] {
        #if canImport(Glibc)
        var entry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        #else
        var entry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = _NSGetEnviron().pointee
        #endif
        var block: [UnsafeMutablePointer<CChar>?] = []
        while let variable = entry?.pointee {
            let key = strchr(variable, 0x3D).map { String(decoding: UnsafeRawBufferPointer(start: variable, count: $0 - variable), as: UTF8.self) }
            if key.map({ overrides[$0] == nil }) ?? true { block.append(strdup(variable)) }
            entry = entry?.advanced(by: 1)
        }
        for (key, value) in overrides { block.append(strdup("\(key)=\(value)")) }
        return block + [nil]
    }

    /// Records the exit `status` (as waitpid gives it) and wakes everyone waiting for it.
    func exited(_ status: Int32) {
        // Exited → its code; killed by a signal → 128 + the signal, as shells report it.
        let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        if (status & 0x7F) != 0, let logPath { Self.noteKilled(name, signal: status & 0x7F, in: logPath) }
        condition.lock()
        self.status = code
        let waiting = takeLineWaiters()
        condition.broadcast()
        condition.unlock()
        waiting.forEach { $0.resume() }
    }

    /// Appends to the service's log that a signal ended it: a killed service writes no line of
    /// its own, and a report marks the kill on its lane from this one.
    private static func noteKilled(_ name: String, signal: Int32, in logPath: String) {
        let line = #"{"ts":"\#(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))","level":"notice","#
            + #""msg":"killed","signal":\#(signal),"service":"\#(name)","by":"MeowCareTesting"}"# + "\n"
        let descriptor = open(logPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = line.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
        _ = close(descriptor)
    }

    /// The CPUs this process may run on, in order (empty where the system does not say): the
    /// choices for a cluster's `cpu`.
    public static func allowedCPUs() -> [Int] {
        var cpus = [Int32](repeating: 0, count: 1024)
        let count = meow_allowed_cpus(&cpus, Int32(cpus.count))
        return count > 0 ? cpus.prefix(Int(count)).map(Int.init) : []
    }

    /// Starts a service and waits (up to `timeout`) for its `ready` log line; a service that
    /// exits or is not ready in time is killed and fails this with its stderr.
    public static func start(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                             logPath: String? = nil, timeout: Duration = .seconds(30)) async throws(MeowCareError) -> MeowProcess {
        let service = try MeowProcess(executable, arguments, environment: environment, logPath: logPath)
        guard await service.waitForLine(containing: #""msg":"ready""#, timeout: timeout) != nil else {
            service.kill()
            throw MeowCareError(.serviceDidNotStart, "\(service.name) did not become ready within \(timeout) (exit status: "
                                + "\(service.exitStatus.map(String.init) ?? "none")). stderr:\n\(service.lines.joined(separator: "\n"))",
                                service: service.name)
        }
        return service
    }

    /// What a process that ran to completion left.
    public struct Completion: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// Runs an executable (a tool such as `meowctl`, or a service's one-shot mode) to completion.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           timeout: Duration = .seconds(60)) async throws(MeowCareError) -> Completion {
        let tool = try MeowProcess(executable, arguments, environment: environment)
        guard let status = await tool.waitForExit(timeout: timeout) else {
            tool.kill()
            throw MeowCareError(.internalError, "\(executable) \(arguments) did not finish within \(timeout).", service: tool.name)
        }
        return Completion(status: status, stdout: tool.standardOutput, stderr: tool.lines.joined(separator: "\n"))
    }

    /// Waits until a process that is not this one's child ends (pidfd: no polling, no reaping);
    /// false when it still runs after `timeout`.
    public static func waitForEnd(ofProcess pid: pid_t, timeout: Duration) async throws(MeowCareError) -> Bool {
        let descriptor = meow_pidfd_open(pid)
        // ESRCH: it has ended (and been reaped) already.
        if descriptor < 0, errno == ESRCH { return true }
        guard descriptor >= 0 else { throw MeowCareError(.internalError, "pidfd_open(\(pid)): \(String(cString: strerror(errno))).") }
        defer { close(descriptor) }
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return await Self.offThread { () -> Bool in
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            return poll(&entry, 1, milliseconds) == 1
        }
    }

    /// Every stderr line so far (a service's log: one JSON object per line).
    public var lines: [String] {
        condition.lock(); defer { condition.unlock() }
        return errorLines
    }

    /// Everything written to stdout so far.
    public var standardOutput: String {
        condition.lock(); defer { condition.unlock() }
        return outputText
    }

    /// The exit status once the process has ended (128 + the signal when a signal ended it); nil while it runs.
    public var exitStatus: Int32? {
        condition.lock(); defer { condition.unlock() }
        return status
    }

    public var isRunning: Bool { exitStatus == nil }

    /// Waits for a stderr line containing `text`, from line `index` on (lines already seen count);
    /// nil when the process ends or `timeout` passes first.
    public func waitForLine(containing text: String, after index: Int = 0, timeout: Duration = .seconds(10)) async -> String? {
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        return await Self.offThread { [self] in
            condition.lock(); defer { condition.unlock() }
            var scanned = index
            while true {
                while scanned < errorLines.count {
                    if errorLines[scanned].contains(text) { return errorLines[scanned] }
                    scanned += 1
                }
                if openPipes == 0 || !condition.wait(until: deadline) { return nil }
            }
        }
    }

    /// How many stderr lines the process has written so far.
    var lineCount: Int {
        condition.lock(); defer { condition.unlock() }
        return errorLines.count
    }

    /// Returns once the process has written more than `seen` stderr lines, or has ended, or
    /// `limit` has passed: a wait for a service's readiness wakes at each line it logs (its
    /// `ready` line among them) rather than at the next tick of a clock.
    func awaitLine(after seen: Int, within limit: Duration) async {
        await awaitChange(within: limit) { $0.errorLines.count > seen || $0.status != nil || $0.openPipes == 0 }
    }

    /// Resumes the line waiter `id` if no line or end has resumed it yet.
    private func resumeLineWaiter(_ id: Int) {
        condition.lock()
        let waiting = lineWaiters.removeValue(forKey: id)
        condition.unlock()
        waiting?.resume()
    }

    /// Every line waiter, removed (each is resumed once, by whoever takes it). `condition` is held.
    private func takeLineWaiters() -> [CheckedContinuation<Void, Never>] {
        guard !lineWaiters.isEmpty else { return [] }
        defer { lineWaiters.removeAll() }
        return Array(lineWaiters.values)
    }

    /// Waits until stdout contains `text` (a tool that streams, like `meowctl log --follow`).
    public func waitForOutput(containing text: String, timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        return await Self.offThread { [self] in
            condition.lock(); defer { condition.unlock() }
            while !outputText.contains(text) {
                if openPipes == 0 || !condition.wait(until: deadline) { return outputText.contains(text) }
            }
            return true
        }
    }

    /// SIGTERM (a clean stop), then up to `timeout` for the exit, SIGKILL after that. Returns
    /// the exit status.
    @discardableResult
    public func stop(timeout: Duration = .seconds(20)) async -> Int32? {
        signal(SIGTERM)
        if let status = await waitForExit(timeout: timeout) { return status }
        kill()
        return exitStatus
    }

    /// SIGKILL, as in a crash: no clean-up. Returns once the process is gone (at most 10 s).
    public func kill() {
        signal(SIGKILL)
        condition.lock(); defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(10)
        while status == nil { if !condition.wait(until: deadline) { break } }
    }

    /// Sends `number` while the process runs.
    public func signal(_ number: Int32) {
        if isRunning { _ = Self.send(number, to: pid) }
    }

    /// Waits for the exit, then (up to a second) for the output pipes to drain: grandchildren
    /// that inherited them may hold them open, and the exit is what counts. nil: still running.
    /// Suspends rather than blocking a thread of its own: a cluster's stop waits for each of its
    /// services at once, and a thread started per wait was most of what the stop cost this process.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(20)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        var drained: ContinuousClock.Instant?
        while true {
            let (status, pipes) = exitState
            let now = ContinuousClock.now
            if let status {
                let until = drained ?? now + .seconds(1)
                drained = until
                if pipes == 0 || now >= until { return status }
                await awaitChange(within: until - now) { $0.openPipes == 0 }
            } else {
                if now >= deadline { return nil }
                await awaitChange(within: deadline - now) { $0.status != nil }
            }
        }
    }

    /// The exit status (nil while running) and how many output pipes are still open.
    private var exitState: (status: Int32?, pipes: Int) {
        condition.lock(); defer { condition.unlock() }
        return (status, openPipes)
    }

    /// Returns once `done` holds (checked with `condition` held), or after the next stderr line,
    /// pipe end or exit, or once `limit` has passed: the caller checks again.
    private func awaitChange(within limit: Duration, done: (MeowProcess) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if done(self) {
                condition.unlock()
                continuation.resume()
                return
            }
            let id = nextLineWaiter
            nextLineWaiter += 1
            lineWaiters[id] = continuation
            condition.unlock()
            Task { [self] in
                try? await Task.sleep(for: limit)
                resumeLineWaiter(id)
            }
        }
    }

    /// Stdout's bytes, kept as text.
    func received(output bytes: ArraySlice<UInt8>) {
        condition.lock(); outputText += String(decoding: bytes, as: UTF8.self); condition.broadcast(); condition.unlock()
    }

    /// Stderr's bytes: each complete line is kept and wakes those waiting for one; the rest
    /// stays in `pending`.
    func received(lines bytes: ArraySlice<UInt8>, pending: inout [UInt8]) {
        pending += bytes
        var waiting: [CheckedContinuation<Void, Never>] = []
        while let newline = pending.firstIndex(of: 0x0A) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            condition.lock(); errorLines.append(line); waiting += takeLineWaiters(); condition.broadcast(); condition.unlock()
        }
        waiting.forEach { $0.resume() }
    }

    /// One pipe has ended (`unfinished`: a last stderr line without its newline); the log is
    /// closed after the second.
    func ended(pipe unfinished: [UInt8], log: LogFile) {
        condition.lock()
        if !unfinished.isEmpty { errorLines.append(String(decoding: unfinished, as: UTF8.self)) }
        openPipes -= 1
        let last = openPipes == 0
        let waiting = takeLineWaiters()
        condition.broadcast()
        condition.unlock()
        waiting.forEach { $0.resume() }
        if last { log.close() }
    }

    private static func send(_ number: Int32, to pid: pid_t) -> Int32 {
        #if canImport(Glibc)
        Glibc.kill(pid, number)
        #else
        Darwin.kill(pid, number)
        #endif
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Runs blocking work on a thread of its own: a blocked thread of Swift's cooperative pool
    /// would stall every other test.
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: work()) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}

/// A process's log file, written with both of its pipes' output.
final class LogFile: @unchecked Sendable {
    // @unchecked: `descriptor` is guarded by `lock`.
    private let lock = NSLock()
    private var descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    func append(_ bytes: ArraySlice<UInt8>) {
        lock.lock(); defer { lock.unlock() }
        guard descriptor >= 0 else { return }
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }

    func close() {
        lock.lock(); defer { lock.unlock() }
        if descriptor >= 0 {
            #if canImport(Glibc)
            _ = Glibc.close(descriptor)
            #else
            _ = Darwin.close(descriptor)
            #endif
        }
        descriptor = -1
    }
}
