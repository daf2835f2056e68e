#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CShim
import Foundation
import Synchronization

/// One service the cluster started: a child process whose stdout and stderr go to a log file
/// in the cluster's directory (what a failing test attaches, and what a start-up failure
/// quotes). Spawned with posix_spawn and reaped by a thread blocked in waitpid, so an exit is
/// seen at once without polling.
///
/// Every child gets `MEOW_EXIT_WITH_PID=<this process>`: it stops by itself once the test
/// process has ended, even when that process was killed and ran no clean-up.
final class ServiceProcess: Sendable {
    let name: String
    let pid: pid_t
    let logPath: String
    private let exit = ExitRecord()
    private let exited = DispatchSemaphore(value: 0)

    init(name: String, executable: String, arguments: [String], environment: [String: String], logPath: String) throws(MeowCareError) {
        self.name = name
        self.logPath = logPath
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else {
            throw MeowCareError(.serviceDidNotStart, "Could not create \(name)'s log file \(logPath): \(String(cString: strerror(errno))).")
        }
        defer { close(log) }
        var variables = ProcessInfo.processInfo.environment
        variables["MEOW_EXIT_WITH_PID"] = String(getpid())
        variables.merge(environment) { _, new in new }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let spawned = meow_spawn(executable, argv, envp, log, log)
        guard spawned > 0 else {
            throw MeowCareError(.serviceDidNotStart, "Could not start \(name) (\(executable)): \(String(cString: strerror(errno))).")
        }
        pid = spawned
        let thread = Thread { [exit, exited, spawned] in
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) < 0 && errno == EINTR {}
            // Exited → its code; killed by a signal → 128 + the signal, as shells report it.
            let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            exit.status.withLock { $0 = code }
            exited.signal()
        }
        thread.name = "meowcare-reaper-\(name)"
        thread.start()
    }

    /// The exit status once the process has ended; nil while it runs.
    var exitStatus: Int32? { exit.status.withLock { $0 } }

    /// SIGTERM (a clean stop), then up to `timeout` for the exit; SIGKILL after that.
    /// Returns the exit status.
    @discardableResult
    func stop(timeout: Duration = .seconds(10)) async -> Int32? {
        if exitStatus == nil { kill(pid, SIGTERM) }
        if await waitForExit(timeout: timeout) { return exitStatus }
        kill(pid, SIGKILL)
        _ = await waitForExit(timeout: .seconds(5))
        return exitStatus
    }

    /// Waits off Swift's cooperative pool (a blocked pool thread would stall other tests).
    func waitForExit(timeout: Duration) async -> Bool {
        if exitStatus != nil { return true }
        let exited = self.exited
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let ended = exited.wait(timeout: .now() + seconds) == .success
                if ended { exited.signal() }  // later waiters see it too
                continuation.resume(returning: ended)
            }
        }
    }

    /// The log's lines (the service writes one JSON object per line), the last `limit` of them.
    func logLines(limit: Int = 200) -> [String] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return Array(text.split(separator: "\n", omittingEmptySubsequences: true).suffix(limit).map(String.init))
    }

    /// A process the cluster dropped without stopping is killed, never left behind.
    deinit {
        if exitStatus == nil { kill(pid, SIGKILL) }
    }
}

/// The exit status, shared between the process and its reaper thread.
private final class ExitRecord: Sendable {
    let status = Mutex<Int32?>(nil)
}
