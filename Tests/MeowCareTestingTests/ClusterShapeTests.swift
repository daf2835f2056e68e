import Foundation
import MeowCareTesting
import TestSupport
import Testing

/// A cluster that changes shape during a test: a cloud alone, devices added later, a device
/// and the cloud killed and started again on their data, and the processes under them.
@Suite struct ClusterShapeTests {
    @Test func aCloudAloneTakesDevicesLaterAndADeviceKilledComesBackOnItsData() async throws {
        var configuration = MeowClusterConfiguration(devices: [])
        configuration.additionalUsers = ["olivia"]
        configuration.credentials = ["olivia": "olivia-fixed-secret"]
        configuration.persistence = .sqlite
        configuration.externalDeployment = nil
        try await withMeowCluster(configuration) { cluster in
            #expect(cluster.devices.isEmpty)
            #expect(try await cluster.cloud.admin.listUsers().compactMap { $0["user"]?.stringValue } == ["olivia"])
            #expect(cluster.cloud.credentials == ["olivia": "olivia-fixed-secret"])

            let phone = try await cluster.addDevice(.init(name: "A", user: "olivia"))
            try await phone.insert("CareSession", ["id": "s1", "title": "Mochi"])
            let process = try #require(cluster.process(of: "A"))
            process.kill()
            #expect(process.exitStatus == 128 + SIGKILL)
            #expect(process.lines.contains { $0.contains(#""msg":"ready""#) }, "the service's log lines")

            let again = try await cluster.addDevice(.init(name: "A", user: "olivia"))
            #expect(again.socketPath == phone.socketPath)
            #expect(cluster.devices.map(\.name) == ["A"])
            #expect(try await again.fetch("CareSession").compactMap { $0["id"]?.stringValue } == ["s1"])
            let running = await #expect(throws: MeowCareError.self) { try await cluster.addDevice(.init(name: "A", user: "olivia")) }
            #expect(running?.code == .invalidConfiguration)
            let stranger = await #expect(throws: MeowCareError.self) { try await cluster.addDevice(.init(name: "B", user: "nobody")) }
            #expect(stranger?.code == .invalidConfiguration)
            try await again.sync.send()

            // The cloud killed and started again on its data: the record is there, and the device reconnects.
            let cloudProcess = try #require(cluster.cloudProcess)
            cloudProcess.kill()
            let cloud = try await cluster.restartCloud()
            #expect(cluster.cloudProcess !== cloudProcess)
            #expect(try await cloud.user("olivia").records(in: .coreData).count == 1)
            try await again.insert("CareSession", ["id": "s2", "title": "Tama"])
            try await again.sync.send()
            #expect(try await cluster.cloud.user("olivia").records(in: .coreData).count == 2)
            #expect(await cluster.cloudProcess?.stop() == 0)
        }
    }

    @Test func anyExecutableRunsWithItsStatusAndOutput() async throws {
        let run = try await MeowProcess.run("meowctl", ["--help"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("meowctl"))
        let missing = await #expect(throws: MeowCareError.self) { try await MeowProcess.start("/nonexistent/tool", []) }
        #expect(missing?.code == .serviceDidNotStart)
    }

    /// A descriptor the test program holds without close-on-exec (a file it is writing) must not
    /// live on in what it starts: on an executable it would make that file's exec fail with
    /// ETXTBSY for as long as the child runs.
    @Test func aStartedProcessInheritsNoDescriptorButItsStandardOnes() async throws {
        let directory = TemporaryDirectory(prefix: "mcfd")
        let descriptor = open(directory.file("held"), O_WRONLY | O_CREAT, 0o600)
        #expect(descriptor > 2)
        defer { close(descriptor) }
        let run = try await MeowProcess.run("/bin/sh", ["-c", "if [ -e /proc/$$/fd/\(descriptor) ]; then echo held; else echo closed; fi"])
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "closed")
    }

    /// A cluster given a CPU runs every service there, threads included; the explorer gives each
    /// cluster its own (docs/EXPLORING.md, "Several clusters").
    @Test func aClusterGivenACPURunsEveryServiceOnItAlone() async throws {
        let allowed = MeowProcess.allowedCPUs()
        #expect(!allowed.isEmpty)
        let cpu = try #require(allowed.last)
        var configuration = MeowClusterConfiguration(devices: ["A": "olivia"])
        configuration.cpu = cpu
        try await withMeowCluster(configuration) { cluster in
            let pids = [cluster.cloudProcess?.pid, cluster.process(of: "A")?.pid].compactMap { $0 }
            #expect(pids.count == 2)
            for pid in pids {
                let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
                #expect(tasks.count > 1)
                for task in tasks {
                    let status = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
                    let line = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }
                    #expect(line?.split(separator: "\t").last.map(String.init) == "\(cpu)")
                }
            }
            #expect(try await cluster["A"].insert("CareSession", ["id": "s1"]).store == "Private")
        }
        #expect(MeowProcess.allowedCPUs() == allowed)
    }
}
