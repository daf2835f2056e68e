import Foundation
import MeowWire

/// A real service (or any of the package's executables) started as a child process. Its stderr
/// is drained continuously into `lines`; readiness is the service's own "ready" log line.
///
/// ```swift
/// let dir = TemporaryDirectory()
/// let store = try await ServiceProcess.start("store-service", ["--socket", dir.file("s.sock"), "--in-memory"])
/// defer { store.stop() }
/// ```
public final class ServiceProcess: @unchecked Sendable {
    // @unchecked: `process` is only touched through its own thread-safe API; `output` is guarded
    // by `condition`.
    public let process: Process
    public let name: String
    private let condition = NSCondition()
    private var output: [String] = []
    private var stdoutText = ""
    private var openPipes = 2
    private var exited = false
    private var finished: Bool { openPipes == 0 }

    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        name = executable
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : Binaries.path(executable))
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let errorPipe = Pipe()
        let outputPipe = Pipe()
        process.standardError = errorPipe
        process.standardOutput = outputPipe
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [weak self, condition] _ in
            condition.lock(); self?.markExited(); condition.broadcast(); condition.unlock()
        }
        try process.run()
        drain(errorPipe.fileHandleForReading, isStderr: true)
        drain(outputPipe.fileHandleForReading, isStderr: false)
    }

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

    private func drain(_ handle: FileHandle, isStderr: Bool) {
        let thread = Thread { [self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                if !isStderr {
                    condition.lock(); stdoutText += String(decoding: chunk, as: UTF8.self); condition.unlock()
                    continue
                }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    condition.lock(); output.append(line); condition.broadcast(); condition.unlock()
                }
            }
            if !pending.isEmpty {
                condition.lock(); output.append(String(decoding: pending, as: UTF8.self)); condition.unlock()
            }
            condition.lock(); openPipes -= 1; condition.broadcast(); condition.unlock()
        }
        thread.start()
    }

    private func markExited() { exited = true }

    /// Every stderr line so far.
    public var lines: [String] {
        condition.lock(); defer { condition.unlock() }
        return output
    }

    public var standardOutput: String {
        condition.lock(); defer { condition.unlock() }
        return stdoutText
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
                if finished || exited || !condition.wait(until: deadline) { return nil }
            }
        }
    }

    /// SIGTERM, then waits for exit; returns the exit status (nil if it did not exit in time).
    @discardableResult
    public func stop(timeout: TimeInterval = 20) async -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        return await waitForExit(timeout: timeout)
    }

    /// SIGKILL: no clean-up, as in a crash.
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        // Bounded: a test must never hang on a child, even on an overloaded machine.
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(1000) }
    }

    public func signal(_ number: Int32) {
        Foundation.kill(process.processIdentifier, number)
    }

    /// Waits for the process to exit, then (up to a second) for its output pipes to drain.
    /// Grandchildren that inherited the pipes may hold them open; exit is what counts.
    public func waitForExit(timeout: TimeInterval = 20) async -> Int32? {
        await offThread { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            condition.lock()
            while !exited { if !condition.wait(until: deadline) { break } }
            let drained = Date().addingTimeInterval(1)
            while exited && !finished { if !condition.wait(until: drained) { break } }
            let didExit = exited
            condition.unlock()
            return didExit ? process.terminationStatus : nil
        }
    }

    deinit {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }
}

/// A failure raised by test support code.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs one of the package's executables to completion: exit status, stdout, stderr.
public func runTool(_ executable: String, _ arguments: [String], stdin: String? = nil,
                    timeout: TimeInterval = 60) async throws -> (status: Int32, stdout: String, stderr: String) {
    let tool = try ServiceProcess(executable, arguments)
    guard let status = await tool.waitForExit(timeout: timeout) else {
        tool.kill()
        throw TestFailure("\(executable) \(arguments) did not finish in \(timeout)s")
    }
    return (status, tool.standardOutput, tool.lines.joined(separator: "\n"))
}
