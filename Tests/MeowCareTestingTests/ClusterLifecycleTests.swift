import Foundation
@testable import MeowCareCluster
@testable import MeowCareTesting
import Testing

@Suite struct ClusterLifecycleTests {
    @Test func aClusterStartsAnswersAndStopsRemovingItsDirectory() async throws {
        let cluster = try await MeowCluster.start(MeowClusterConfiguration(devices: ["A": "olivia", "P": "pablo"]))
        let directory = cluster.directory
        #expect(try await cluster["A"].isHealthy())
        #expect(try await cluster.cloud.admin.listUsers().compactMap { $0["user"]?.stringValue }.sorted() == ["olivia", "pablo"])
        let session = try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        #expect(session.store == "Private")
        await cluster.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func aClientUsedAfterItsClusterStoppedFailsClearly() async throws {
        let cluster = try await MeowCluster.start(MeowClusterConfiguration(devices: ["A"]))
        let device = cluster["A"]
        await cluster.stop()
        let error = await #expect(throws: MeowCareError.self) { try await device.fetch("CareSession") }
        #expect(error?.code == .clusterStopped)
        #expect(error?.message.contains("after its cluster stopped") == true)
        let cloudError = await #expect(throws: MeowCareError.self) { try await cluster.cloud.admin.listUsers() }
        #expect(cloudError?.code == .clusterStopped)
    }

    @Test func eightClustersRunInParallelWithoutSeeingEachOther() async throws {
        let seen = try await withThrowingTaskGroup(of: (Int, [String], String).self) { group in
            for index in 0..<8 {
                group.addTask {
                    let cluster = try await MeowCluster.start(MeowClusterConfiguration(devices: ["A", "B"]))
                    do {
                        try await cluster["A"].insert("CareSession", ["id": .string("s\(index)"), "title": "Mochi"])
                        try await cluster.settle()
                        let ids = try await cluster["B"].fetch("CareSession").compactMap { $0["id"]?.stringValue }
                        await cluster.stop()
                        return (index, ids, cluster.directory)
                    } catch {
                        await cluster.stop()
                        throw error
                    }
                }
            }
            var results: [(Int, [String], String)] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(seen.count == 8)
        for (index, ids, _) in seen { #expect(ids == ["s\(index)"]) }
        #expect(Set(seen.map(\.2)).count == 8)
    }

    @Test func aDeviceThatCannotStartFailsWithItsOwnLogLines() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meowcare-bad-model-\(UUID().uuidString).json").path
        try #"{"name": "Broken", "entities": [{"name": "Cat", "relationships": [{"name": "litter", "destination": "Litter"}]}]}"#
            .write(toFile: directory, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = MeowClusterConfiguration(devices: ["A"])
        configuration.modelFile = directory
        let error = await #expect(throws: MeowCareError.self) { try await MeowCluster.start(configuration) }
        #expect(error?.code == .serviceDidNotStart)
        #expect(error?.service == "A")
        #expect(error?.message.contains("exited with status 78") == true)
        #expect(error?.message.contains("bad model") == true)
    }

    @Test func aMissingBinaryDirectorySaysHowToBuildTheServices() {
        let error = #expect(throws: MeowCareError.self) { try ExecutableLocator.locate(environment: ["MEOWCARE_BIN_DIR": "/nonexistent/meowcare"]) }
        #expect(error?.code == .executablesNotFound)
        #expect(error?.message.contains("swift build --package-path") == true)
    }

    @Test func anInMemoryClusterLivesOnTmpfsWhenThereIsOne() async throws {
        let tmpfs = ClusterDirectoryParent.isWritableTmpfs("/dev/shm")
        let cluster = try await MeowCluster.start(MeowClusterConfiguration(devices: ["A"]))
        let directory = cluster.directory
        #expect(directory.hasPrefix(tmpfs ? "/dev/shm/mc." : "/tmp/mc."))
        #expect(FileManager.default.fileExists(atPath: "\(directory)/d0.sock"))
        #expect(try await cluster["A"].count("CareSession") == 0)
        await cluster.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func aSQLiteClusterKeepsItsStoresInItsDirectory() async throws {
        var configuration = MeowClusterConfiguration(devices: ["A"])
        configuration.persistence = .sqlite
        try await withMeowCluster(configuration) { cluster in
            // On the disk its durability is about, never on a tmpfs.
            #expect(cluster.directory.hasPrefix("/tmp/mc."))
            try await cluster["A"].insert("CareSession", ["id": "s1"])
            #expect(FileManager.default.fileExists(atPath: "\(cluster.directory)/device-0/MeowCare-Private.sqlite"))
            #expect(FileManager.default.fileExists(atPath: "\(cluster.directory)/cloud/cloud.sqlite"))
        }
    }

    @Test func withMeowClusterStopsTheClusterWhenItsBodyThrows() async throws {
        struct Planned: Error {}
        let kept = Kept()
        await #expect(throws: Planned.self) {
            try await withMeowCluster(devices: ["A": "olivia"]) { cluster in
                kept.cluster = cluster
                #expect(try MeowCluster.current === cluster)
                throw Planned()
            }
        }
        let cluster = try #require(kept.cluster)
        #expect(cluster.isStopped)
        #expect(!FileManager.default.fileExists(atPath: cluster.directory))
        #expect(throws: MeowCareError.self) { try MeowCluster.current }
    }

    @Test(.meowCluster(devices: ["A", "B"]))
    func theTraitGivesEachTestItsOwnRunningCluster() async throws {
        let cluster = try MeowCluster.current
        #expect(cluster.devices.map(\.name) == ["A", "B"])
        #expect(cluster.users == ["owner"])
        #expect(!cluster.isStopped)
    }

    @Test(.meowCluster(devices: ["A", "B"]))
    func aFailedTestsArtifactsHoldTheLogsTheRequestLogAndTheFrames() async throws {
        let cluster = try MeowCluster.current
        try await cluster["A"].insert("CareSession", ["id": "s1"])
        try await cluster.settle()
        let artifacts = Dictionary(uniqueKeysWithValues: await FailureArtifacts.collect(cluster).map { ($0.name, $0.text) })
        #expect(artifacts.keys.sorted() == ["A.log", "B.log", "cloud-requests.jsonl", "cloud.log", "frames.txt", "report.html"])
        #expect(artifacts["report.html"]?.contains(#"id="meow-data""#) == true)
        #expect(artifacts["cloud.log"]?.contains("\"msg\":\"ready\"") == true)
        #expect(artifacts["cloud-requests.jsonl"]?.contains("records.modify") == true)
        #expect(artifacts["frames.txt"]?.contains(#"A → {"op":"sync.now""#) == true)
    }

    @Test(.meowCluster(devices: ["A", "B"]))
    func settleCountsTheCloudsWritesAndSaysWhatToDo() async throws {
        let cluster = try MeowCluster.current
        try await cluster["A"].insert("CareSession", ["id": "s1"])
        let error = await #expect(throws: MeowCareError.self) { try await cluster.settle(maxRounds: 1) }
        #expect(error?.code == .didNotSettle)
        #expect(error?.message.contains("cloud: ") == true && error?.message.contains("records.modify") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("What to do:") == true)
        let none = await #expect(throws: MeowCareError.self) { try await cluster.settle(maxRounds: 0) }
        #expect(none?.code == .invalidArguments)
        #expect(try await cluster.settle().rounds >= 1)
        #expect(try await cluster["B"].fetch("CareSession").count == 1)
    }

    /// A round passes over a device whose `sync.now` could change nothing (quiescent, and its
    /// last fetch came after every write): C's first round sends and fetches after its own
    /// write, so only A and B (which fetched before it) are asked again, and the closing round
    /// asks nobody. The rounds are those of a settle that asks every device every round.
    @Test(.meowCluster(devices: ["A", "B", "C"]))
    func settlePassesOverDevicesThatCanChangeNothing() async throws {
        let cluster = try MeowCluster.current
        let before = try await cluster.cloud.admin.requestLog(limit: 10_000).last?["seq"]?.intValue ?? 0
        try await cluster["C"].insert("CareSession", ["id": "s1"])
        let report = try await cluster.settle()
        #expect(report.rounds == 3)
        var fetches: [String: Int] = [:]
        for entry in try await cluster.cloud.admin.requestLog(after: before, limit: 10_000) where entry["op"] == "changes.fetchDatabase" {
            fetches[entry["client"]?.stringValue ?? "?", default: 0] += 1
        }
        // Two databases a fetch: A and B fetch in the first two rounds, C in the first only.
        #expect(fetches == ["store-service mirror (A)": 4, "store-service mirror (B)": 4, "store-service mirror (C)": 2], "\(fetches)")
        for name in ["A", "B"] { #expect(try await cluster[name].fetch("CareSession").count == 1, "\(name)") }
        let busy = report.statuses.filter { !$0.value.quiescent }.map(\.key)
        #expect(busy.isEmpty, "\(busy)")
        #expect(try await cluster.convergence().isConverged)
    }

    /// A store-service never changes its model while it runs: the checks read it through
    /// `MeowDevice.model()`, which asks the device once.
    @Test(.meowCluster(devices: ["A"]))
    func theChecksAskADevicesModelOnce() async throws {
        let cluster = try MeowCluster.current
        try await cluster["A"].insert("CareSession", ["id": "s1"])
        try await cluster.settle()
        for _ in 0..<2 {
            #expect(try await cluster.convergence().isConverged)
            #expect(try await cluster.invariants().isClean)
        }
        #expect(try await cluster["A"].model()["entities"]?.arrayValue?.isEmpty == false)
        let frames = await FailureArtifacts.collect(cluster).first { $0.name == "frames.txt" }?.text ?? ""
        #expect(frames.components(separatedBy: #"A → {"op":"model.get""#).count - 1 == 1, "model.get asked more than once")
    }

    @Test(.meowCluster(devices: ["A"]))
    func aFailureReportShowsNoCredentialTheClusterKnows() async throws {
        let cluster = try MeowCluster.current
        _ = try await cluster.cloud.admin.createUser("zoe", credential: "zoe-credential-in-clear-0001")
        _ = try await cluster.cloud.connect(credential: "zoe-credential-in-clear-0001", label: "cloud:zoe")
        _ = try await cluster.cloud.admin.exportSnapshot(includeCredentials: true)
        let artifacts = await FailureArtifacts.collect(cluster)
        let text = artifacts.map(\.text).joined(separator: "\n")
        for credential in ["zoe-credential-in-clear-0001", cluster.cloud.adminCredential] + cluster.cloud.credentials.values {
            #expect(!text.contains(credential), "a credential in the report: \(credential)")
        }
        #expect(artifacts.first { $0.name == "frames.txt" }?.text.contains("<redacted>") == true)
    }

    @Test(.meowCluster(devices: ["A"]))
    func settleGivesUpWithWhatIsStillDeferred() async throws {
        let cluster = try MeowCluster.current
        try await cluster.cloud.admin.injectFault(CloudFault(code: "requestRateLimited", op: "records.modify", retryAfterSeconds: 3600))
        try await cluster["A"].insert("CareSession", ["id": "s1"])
        let error = await #expect(throws: MeowCareError.self) { try await cluster.settle(maxRounds: 3) }
        #expect(error?.code == .didNotSettle)
        #expect(error?.message.contains("deferred 1") == true)
        #expect(error?.message.contains("advanceClocks(by:)") == true)
    }
}

/// Carries the cluster out of the closure that owned it.
private final class Kept: @unchecked Sendable {
    // @unchecked: written once inside the closure, read after it returned.
    var cluster: MeowCluster?
}
