import Foundation
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

@Suite("deploy/meowcare-local")
struct DeployTests {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/meowcare-local").path

    /// Runs `body` against a deployment in `directory` and always brings it down afterwards, so a
    /// failing test never leaves services running.
    func withDeployment<T>(in directory: TemporaryDirectory, _ body: () async throws -> T) async throws -> T {
        do {
            let value = try await body()
            _ = try? await run(["down", "--dir", directory.path])
            return value
        } catch {
            _ = try? await run(["down", "--dir", directory.path])
            throw error
        }
    }

    func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let tool = try MeowProcess("/bin/bash", [Self.script] + arguments, environment: ["MEOWCARE_BIN_DIR": try ExecutableLocator.locate().directory])
        guard let status = await tool.waitForExit(timeout: .seconds(120)) else {
            tool.kill()
            throw TestFailure("meowcare-local \(arguments) did not finish")
        }
        return (status, tool.standardOutput, tool.lines.joined(separator: "\n"))
    }

    @Test("up waits for health and reports every service; status sees them ready; down leaves nothing running",
          arguments: [["--in-memory"], []])
    func upStatusDown(persistence: [String]) async throws {
        let directory = TemporaryDirectory(prefix: "dep")
        try await withDeployment(in: directory) { try await upStatusDown(persistence, directory) }
    }

    private func upStatusDown(_ persistence: [String], _ directory: TemporaryDirectory) async throws {
        let up = try await run(["up", "--dir", directory.path] + persistence)
        #expect(up.status == 0, "\(up.stderr)")
        for name in ["sync-service", "device-a", "device-b", "device-p"] {
            #expect(up.stdout.contains(name))
            #expect(FileManager.default.fileExists(atPath: "\(directory.path)/sockets/\(name).sock"))
        }
        let pids = try FileManager.default.contentsOfDirectory(atPath: "\(directory.path)/pids").compactMap {
            Int32(try String(contentsOfFile: "\(directory.path)/pids/\($0)", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        #expect(pids.count == 8)  // a supervisor and its service, four times
        let status = try await run(["status", "--dir", directory.path])
        #expect(status.status == 0)
        #expect(status.stdout.components(separatedBy: "ready").count - 1 == 4)
        let down = try await run(["down", "--dir", directory.path])
        #expect(down.status == 0, "\(down.stderr)")
        for pid in pids { #expect(kill(pid, 0) != 0, "process \(pid) is still running") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(directory.path)/sockets").isEmpty)
        if persistence.isEmpty {
            #expect(FileManager.default.fileExists(atPath: "\(directory.path)/data/device-a"))
        }
    }

    @Test("a crashed service is restarted by its supervisor and the restart is reported")
    func crashedServiceIsRestarted() async throws {
        let directory = TemporaryDirectory(prefix: "dep")
        try await withDeployment(in: directory) { try await crashAndRestart(directory) }
    }

    private func crashAndRestart(_ directory: TemporaryDirectory) async throws {
        #expect(try await run(["up", "--dir", directory.path, "--in-memory"]).status == 0)
        let childFile = "\(directory.path)/pids/device-b.child"
        let first = try #require(Int32(try String(contentsOfFile: childFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        kill(first, SIGKILL)
        // The supervisor restarts it after a 1 s backoff; readiness is the service's health answer.
        var status = try await run(["status", "--dir", directory.path])
        for _ in 0..<100 where !(status.status == 0 && status.stdout.contains("restarts 1")) {
            _ = await offThread { usleep(100_000) }
            status = try await run(["status", "--dir", directory.path])
        }
        #expect(status.status == 0, "\(status.stdout)")
        #expect(status.stdout.contains("device-b      ready              restarts 1"))
        let supervisorLog = try String(contentsOfFile: "\(directory.path)/logs/supervisor.log", encoding: .utf8)
        #expect(supervisorLog.contains("device-b exited with status 137; restart #1 in 1s"))
        let second = Int32(try String(contentsOfFile: childFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(second != nil && second != first)
        #expect(try await run(["down", "--dir", directory.path]).status == 0)
    }
}
