#if canImport(Glibc)
import Glibc
#endif
import CShim
import Foundation
import MeowWire

/// A real service (or any of the package's executables) started as a child process. Its stderr
/// is drained continuously into `lines`; readiness is the service's own "ready" log line.
///
/// Spawned with posix_spawn and reaped with waitpid on a thread of its own: Foundation's Process
/// notices an exit through a descriptor that children spawned concurrently by other tests can
/// inherit, which hides exits; and it lets children inherit a blocked signal mask.
///
/// ```swift
/// let dir = TemporaryDirectory()
/// let store = try await ServiceProcess.start("store-service", ["--socket", dir.file("s.sock"), "--in-memory"])
/// defer { store.kill() }
/// ```
public final class ServiceProcess: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    public let name: String
    public let pid: pid_t
    private let condition = NSCondition()
    private var output: [String] = []
    private var stdoutText = ""
    private var openPipes = 2
    private var exitStatus: Int32?
    private var finished: Bool { openPipes == 0 }

    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        name = executable
        let path = executable.hasPrefix("/") ? executable : Binaries.path(executable)
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        guard meow_pipe_cloexec(&outPipe) == 0, meow_pipe_cloexec(&errPipe) == 0 else {
            throw TestFailure("pipe2: \(String(cString: strerror(errno)))")
        }
        // Services stop by themselves if this test runner dies (see ParentWatch).
        let env = ProcessInfo.processInfo.environment.merging(["MEOW_EXIT_WITH_PID": String(getpid())]) { _, new in new }
            .merging(environment ?? [:]) { _, new in new }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let spawned = meow_spawn(path, argv, envp, outPipe[1], errPipe[1])
        close(outPipe[1])
        close(errPipe[1])
        guard spawned > 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw TestFailure("could not start \(path): \(String(cString: strerror(errno)))")
        }
        pid = spawned
        drain(fd: errPipe[0], isStderr: true)
        drain(fd: outPipe[0], isStderr: false)
        let reaper = Thread { [weak self, condition, pid] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            // WIFEXITED → exit code; killed by a signal → 128 + signal, as shells report it.
            let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            condition.lock()
            self?.record(exit: code)
            condition.broadcast()
            condition.unlock()
        }
        reaper.start()
    }

    private func record(exit code: Int32) { exitStatus = code }

    /// Starts a service and waits (up to `timeout`) for its "ready" log line.
    public static func start(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                             timeout: TimeInterval = 30) async throws -> ServiceProcess {
        let service = try ServiceProcess(executable, arguments, environment: environment)
        guard await service.waitForLine(containing: "\"msg\":\"ready\"", timeout: timeout) != nil else {
            service.kill()
            throw TestFailure("\(executable) did not become ready in \(timeout)s. stderr:\n\(service.lines.joined(separator: "\n"))")
        }
        return service
    }

    private func drain(fd: Int32, isStderr: Bool) {
        let thread = Thread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                if !isStderr {
                    condition.lock(); stdoutText += String(decoding: buffer[0..<n], as: UTF8.self); condition.broadcast(); condition.unlock()
                    continue
                }
                pending += buffer[0..<n]
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    condition.lock(); output.append(line); condition.broadcast(); condition.unlock()
                }
            }
            close(fd)
            condition.lock()
            if !pending.isEmpty { output.append(String(decoding: pending, as: UTF8.self)) }
            openPipes -= 1
            condition.broadcast()
            condition.unlock()
        }
        thread.start()
    }

    /// Every stderr line so far.
    public var lines: [String] {
        condition.lock(); defer { condition.unlock() }
        return output
    }

    public var standardOutput: String {
        condition.lock(); defer { condition.unlock() }
        return stdoutText
    }

    public var isRunning: Bool {
        condition.lock(); defer { condition.unlock() }
        return exitStatus == nil
    }

    /// Waits for a stderr line containing `text` (searching lines already seen, too).
    public func waitForLine(containing text: String, after index: Int = 0, timeout: TimeInterval = 10) async -> String? {
        await offThread { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            condition.lock(); defer { condition.unlock() }
            var scanned = index
            while true {
                while scanned < output.count {
                    if output[scanned].contains(text) { return output[scanned] }
                    scanned += 1
                }
                if finished || !condition.wait(until: deadline) { return nil }
            }
        }
    }

    /// Waits until standard output contains `text` (a tool that streams, like `meowctl log --follow`).
    public func waitForOutput(containing text: String, timeout: TimeInterval = 10) async -> Bool {
        await offThread { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            condition.lock(); defer { condition.unlock() }
            while !stdoutText.contains(text) {
                if finished || !condition.wait(until: deadline) { return stdoutText.contains(text) }
            }
            return true
        }
    }

    /// SIGTERM, then waits for exit; returns the exit status (nil if it did not exit in time).
    @discardableResult
    public func stop(timeout: TimeInterval = 20) async -> Int32? {
        signal(SIGTERM)
        return await waitForExit(timeout: timeout)
    }

    /// SIGKILL: no clean-up, as in a crash. Waits (bounded) until the process is gone.
    public func kill() {
        signal(SIGKILL)
        condition.lock()
        let deadline = Date().addingTimeInterval(10)
        while exitStatus == nil { if !condition.wait(until: deadline) { break } }
        condition.unlock()
    }

    public func signal(_ number: Int32) {
        if isRunning { Glibc.kill(pid, number) }
    }

    /// Waits for the process to exit, then (up to a second) for its output pipes to drain.
    /// Grandchildren that inherited the pipes may hold them open; exit is what counts.
    public func waitForExit(timeout: TimeInterval = 20) async -> Int32? {
        await offThread { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            condition.lock(); defer { condition.unlock() }
            while exitStatus == nil { if !condition.wait(until: deadline) { break } }
            let drained = Date().addingTimeInterval(1)
            while exitStatus != nil && !finished { if !condition.wait(until: drained) { break } }
            return exitStatus
        }
    }

    /// A process the test dropped without stopping is killed, never left behind.
    deinit {
        if exitStatus == nil { Glibc.kill(pid, SIGKILL) }
    }
}

/// A failure raised by test support code.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs one of the package's executables to completion: exit status, stdout, stderr.
public func runTool(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    timeout: TimeInterval = 60) async throws -> (status: Int32, stdout: String, stderr: String) {
    let tool = try ServiceProcess(executable, arguments, environment: environment)
    guard let status = await tool.waitForExit(timeout: timeout) else {
        tool.kill()
        throw TestFailure("\(executable) \(arguments) did not finish in \(timeout)s")
    }
    return (status, tool.standardOutput, tool.lines.joined(separator: "\n"))
}

/// Waits until a process that is not our child ends (pidfd: no polling, no reaping needed);
/// false when it is still running after the timeout.
public func waitForEnd(ofProcess pid: pid_t, timeoutMilliseconds: Int32) async throws -> Bool {
    let descriptor = meow_pidfd_open(pid)
    // ESRCH: it has ended (and been reaped) already.
    if descriptor < 0, errno == ESRCH { return true }
    guard descriptor >= 0 else { throw TestFailure("pidfd_open(\(pid)): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    return await offThread { () -> Bool in
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, timeoutMilliseconds) == 1
    }
}
