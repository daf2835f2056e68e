import Foundation
import MeowWire
import TestSupport
import Testing
import MeowCareCluster

/// kill -9 at named points (MEOW_CRASH_AT), several hits each; after every restart: no
/// acknowledged write lost, nothing duplicated, both devices converge with the cloud, and every
/// SQLite file passes integrity_check.
@Suite("Crash harness", .serialized)
struct CrashHarnessTests {
    /// A cluster of a sync-service and devices A and B of one user, on files in `directory`,
    /// each started again with a crash point armed or not.
    final class Deployment: @unchecked Sendable {
        // @unchecked: used by one test at a time.
        let directory = TemporaryDirectory(prefix: "crash")
        private var cluster: MeowCluster?

        init() throws {}

        var cloud: MeowProcess? { cluster?.cloudProcess }
        var devices: [String: MeowProcess] {
            Dictionary(uniqueKeysWithValues: (cluster?.devices ?? []).compactMap { device in cluster?.process(of: device.name).map { (device.name, $0) } })
        }

        func socket(_ name: String) -> String { name == "cloud" ? cluster!.cloud.socketPath : cluster![name].socketPath }

        /// The cluster's first start, or the cloud's next on its data.
        func startCloud(crashAt: String? = nil) async throws {
            let environment = ["MEOW_CRASH_AT": crashAt ?? ""]
            if let cluster {
                try await cluster.restartCloud(environment: environment)
                return
            }
            var configuration = MeowClusterConfiguration(devices: [])
            configuration.additionalUsers = ["u"]
            configuration.persistence = .sqlite
            configuration.directory = directory.path
            configuration.cloudEnvironment = environment
            configuration.externalDeployment = nil
            cluster = try await MeowCluster.start(configuration)
        }

        func startDevice(_ name: String, crashAt: String? = nil) async throws {
            try await cluster!.addDevice(.init(name: name, user: "u", environment: ["MEOW_CRASH_AT": crashAt ?? ""], dataDirectory: directory.file(name)))
        }

        func client(_ name: String) async throws -> WireClient {
            let client = try WireClient(socketPath: socket(name), timeout: .seconds(60))
            try await client.hello(client: "crash-harness")
            return client
        }

        /// The ids of every CareEvent on a device.
        func eventIDs(_ name: String) async throws -> [String] {
            let client = try await self.client(name)
            defer { client.close() }
            let objects = try await client.call("fetch", ["entity": "CareEvent"])["objects"]?.arrayValue ?? []
            return objects.compactMap { $0["values"]?["id"]?.stringValue }
        }

        func integrityProblems() async throws -> [String] {
            var problems: [String] = []
            for file in [directory.file("cloud/cloud.sqlite")] + ["A", "B"].flatMap({ [directory.file("\($0)/MeowCare-Private.sqlite"), directory.file("\($0)/MeowCare-Shared.sqlite")] })
            where FileManager.default.fileExists(atPath: file) {
                let result = try await MeowProcess.run("/usr/bin/sqlite3", [file, "PRAGMA integrity_check"])
                if result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "ok" { problems.append("\(file): \(result.stdout)") }
            }
            return problems
        }

        /// A sends what it has (quiescent after), B fetches; both hold exactly `expected` events,
        /// the same ones; then everything stops and every file passes integrity_check.
        func expectConvergence(expected: Int) async throws {
            let a = try await client("A")
            _ = try await a.call("sync.send", [:])
            let status = try await a.call("sync.status", [:])
            #expect(status["quiescent"] == true, "A still has work: \(status)")
            a.close()
            let b = try await client("B")
            _ = try await b.call("sync.fetch", [:])
            b.close()
            let onA = try await eventIDs("A"), onB = try await eventIDs("B")
            #expect(onA.count == expected && Set(onB) == Set(onA) && onB.count == onA.count, "A \(onA.count), B \(onB.count) of \(expected)")
            await stopAll()
            #expect(try await integrityProblems().isEmpty)
        }

        func stopAll() async { await cluster?.stop() }
    }

    /// Saves `count` events in one save; true when the save was acknowledged.
    static func save(_ client: WireClient, batch: Int, count: Int) async -> Bool {
        do {
            let context = try await client.call("context.open", [:])["context"] ?? .null
            var objects: [JSONValue] = []
            for index in 0..<count {
                objects.append(["entity": "CareEvent", "values": [
                    "id": .string("b\(batch)-\(index)"), "eventTypeRaw": "bloodGlucose", "value": .double(Double(100 + index)),
                    "occurredAt": "2026-11-30T08:00:00Z", "updatedAt": "2026-11-30T08:00:00Z"]])
            }
            _ = try await client.call("object.insert", ["context": context, "objects": .array(objects), "returnObjectIDs": false])
            _ = try await client.call("context.save", ["context": context, "report": "summary"])
            return true
        } catch {
            return false
        }
    }

    @Test("store-service killed right after a save commits, before its reply: acknowledged saves survive, the killed one is all or nothing, devices converge",
          arguments: [1, 2, 3])
    func afterSaveCommit(hit: Int) async throws {
        let deployment = try Deployment()
        try await deployment.startCloud()
        try await deployment.startDevice("A", crashAt: "store.afterSaveCommit:\(hit)")
        try await deployment.startDevice("B")
        let a = try await deployment.client("A")
        var acknowledged: [Int] = []
        var unacknowledged: Int?
        for batch in 0..<5 {
            if await Self.save(a, batch: batch, count: 10) { acknowledged.append(batch) } else { unacknowledged = batch; break }
        }
        a.close()
        #expect(unacknowledged == hit - 1, "the save that reached the crash point was not acknowledged")
        #expect(await deployment.devices["A"]?.waitForExit() == 128 + 9, "A died as kill -9 would")
        try await deployment.startDevice("A")
        let ids = try await deployment.eventIDs("A")
        for batch in acknowledged { #expect((0..<10).allSatisfy { ids.contains("b\(batch)-\($0)") }, "acknowledged batch \(batch) lost") }
        if let batch = unacknowledged {
            let present = (0..<10).filter { ids.contains("b\(batch)-\($0)") }.count
            #expect(present == 0 || present == 10, "the interrupted save is half there: \(present) of 10")
        }
        #expect(Set(ids).count == ids.count, "duplicates on A")
        try await deployment.expectConvergence(expected: ids.count)
    }

    @Test("sync-service killed after a batch commits, before its reply: the device resends, nothing is lost or duplicated",
          arguments: [1, 2, 3])
    func afterServerCommit(hit: Int) async throws {
        let deployment = try Deployment()
        try await deployment.startCloud()
        try await deployment.startDevice("A")
        try await deployment.startDevice("B")
        let a = try await deployment.client("A")
        for batch in 0..<3 { #expect(await Self.save(a, batch: batch, count: 400)) }
        // Restart the cloud with the crash point armed; the hit-th committing request kills it.
        _ = await deployment.cloud?.stop()
        try await deployment.startCloud(crashAt: "sync.afterCommit:\(hit)")
        do { _ = try await a.call("sync.send", [:]) } catch {}
        #expect(await deployment.cloud?.waitForExit() == 128 + 9, "the cloud died as kill -9 would")
        try await deployment.startCloud()
        a.close()
        try await deployment.expectConvergence(expected: 1200)
    }

    @Test("device killed after the server committed a batch and answered, before the verdict was applied: it resends and converges",
          arguments: [1, 2, 3])
    func afterServerReply(hit: Int) async throws {
        let deployment = try Deployment()
        try await deployment.startCloud()
        try await deployment.startDevice("A", crashAt: "mirror.afterServerReply:\(hit)")
        try await deployment.startDevice("B")
        let a = try await deployment.client("A")
        for batch in 0..<3 { #expect(await Self.save(a, batch: batch, count: 400)) }
        do { _ = try await a.call("sync.send", [:]) } catch {}
        a.close()
        #expect(await deployment.devices["A"]?.waitForExit() == 128 + 9, "A died as kill -9 would")
        try await deployment.startDevice("A")
        try await deployment.expectConvergence(expected: 1200)
    }

    @Test("device killed after applying a fetched page (with its token): the next fetch resumes, every record exactly once",
          arguments: [1, 2])
    func afterApplyingPage(hit: Int) async throws {
        let deployment = try await Self.fetchKilled(at: "mirror.afterApplyingPage:\(hit)")
        try await deployment.expectConvergence(expected: 1200)
    }

    /// A saves and sends 1,200 events; B, started to die at `crashAt`, fetches and is killed
    /// there; B is started again. Returns the deployment for the checks after the restart.
    static func fetchKilled(at crashAt: String) async throws -> Deployment {
        let deployment = try Deployment()
        try await deployment.startCloud()
        try await deployment.startDevice("A")
        try await deployment.startDevice("B", crashAt: crashAt)
        let a = try await deployment.client("A")
        for batch in 0..<3 { #expect(await Self.save(a, batch: batch, count: 400)) }
        _ = try await a.call("sync.send", [:])
        a.close()
        let b = try await deployment.client("B")
        do { _ = try await b.call("sync.fetch", [:]) } catch {}
        b.close()
        #expect(await deployment.devices["B"]?.waitForExit() == 128 + 9, "B died as kill -9 would")
        try await deployment.startDevice("B")
        return deployment
    }

    /// New records are written straight into rows, history and metadata (`MirrorImport`), one
    /// transaction per page: a kill between two of a page's rows leaves none of them.
    @Test("device killed in the middle of writing a fetched page's new records: none of the page is kept, the next fetch applies it once",
          arguments: [1, 650, 1100])
    func midImport(hit: Int) async throws {
        let deployment = try await Self.fetchKilled(at: "mirror.midImport:\(hit)")
        // Pages hold 1,000 records: the first page's rows before the kill were rolled back with it.
        #expect(try await deployment.eventIDs("B").count == (hit > 1000 ? 1000 : 0))
        try await deployment.expectConvergence(expected: 1200)
    }
}
