#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Two services on one data directory (or one socket) never both run: the second start fails,
/// naming the first by pid.
@Suite("Start-up locks")
struct StartupLockTests {
    /// Waits until `process` is ready (true) or has exited (false).
    static func comesUp(_ process: MeowProcess) async -> Bool {
        await process.waitForLine(containing: "\"msg\":\"ready\"", timeout: .seconds(60)) != nil
    }

    /// Starts two sync-services with the same arguments at once: the one that came up and the
    /// one that exited 1, or nil (recorded as an issue) when not exactly one came up.
    static func race(_ arguments: [String], round: Int) async throws -> (winner: MeowProcess, loser: MeowProcess)? {
        let first = try MeowProcess("sync-service", arguments)
        let second = try MeowProcess("sync-service", arguments)
        let up = [await comesUp(first), await comesUp(second)]
        #expect(up.filter { $0 }.count == 1, "round \(round): \(up)")
        guard up.filter({ $0 }).count == 1 else {
            first.kill()
            second.kill()
            return nil
        }
        let (winner, loser) = up[0] ? (first, second) : (second, first)
        #expect(await loser.waitForExit() == 1)
        return (winner, loser)
    }

    @Test("two sync-services started at once on one data directory and socket: exactly one comes up, the other exits 1 naming it",
          arguments: 0..<3)
    func simultaneousStarts(round: Int) async throws {
        let directory = TemporaryDirectory()
        let arguments = ["--socket", directory.file("run/cloud.sock"), "--data-dir", directory.file("data")]
        guard let (winner, loser) = try await Self.race(arguments, round: round) else { return }
        let message = loser.lines.joined(separator: "\n")
        #expect(message.contains("Another service (pid \(winner.pid)) is using the data directory \(directory.file("data"))"), "\(message)")
        #expect(try RawConnection(path: directory.file("run/cloud.sock")).hello()["ok"] == true)
        #expect(await winner.stop() == 0)
    }

    @Test("a second start on a data directory in use fails with the holder's pid, also on another socket",
          arguments: ["store-service", "sync-service"])
    func dataDirectoryInUse(executable: String) async throws {
        let directory = TemporaryDirectory()
        let data = directory.file("data")
        let running = try await MeowProcess.start(executable, ["--socket", directory.file("a.sock"), "--data-dir", data])
        let second = try await MeowProcess.run(executable, ["--socket", directory.file("b.sock"), "--data-dir", data])
        #expect(second.status == 1)
        #expect(second.stderr.contains("Another service (pid \(running.pid)) is using the data directory \(data)"), "\(second.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("b.sock")))
        #expect(try RawConnection(path: directory.file("a.sock")).hello()["ok"] == true)
        #expect(await running.stop() == 0)
        // A clean stop removes both lock files; the directory is free again.
        #expect(!FileManager.default.fileExists(atPath: "\(data)/meowcare.lock"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("a.sock.lock")))
        let next = try await MeowProcess.start(executable, ["--socket", directory.file("b.sock"), "--data-dir", data])
        #expect(await next.stop() == 0)
    }

    @Test("after kill -9 the lock files are left behind, and the next start takes them")
    func locksAfterACrash() async throws {
        let directory = TemporaryDirectory()
        let arguments = ["--socket", directory.file("c.sock"), "--data-dir", directory.file("data")]
        let crashed = try await MeowProcess.start("sync-service", arguments)
        crashed.kill()
        #expect(FileManager.default.fileExists(atPath: directory.file("data/meowcare.lock")))
        let next = try await MeowProcess.start("sync-service", arguments)
        #expect(try RawConnection(path: directory.file("c.sock")).hello()["ok"] == true)
        #expect(await next.stop() == 0)
    }

    @Test("two in-memory services started at once on one socket: exactly one comes up, the other exits 1 naming it")
    func simultaneousSocket() async throws {
        let directory = TemporaryDirectory()
        let arguments = ["--socket", directory.file("run/s.sock"), "--in-memory"]
        guard let (winner, loser) = try await Self.race(arguments, round: 0) else { return }
        #expect(loser.lines.joined(separator: "\n").contains("Another service (pid \(winner.pid)) is already listening on \(directory.file("run/s.sock"))"))
        #expect(await winner.stop() == 0)
    }
}
