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

    /// Everything a process leaves is kept: stdout as text, stderr as lines (a last line without
    /// its newline too), its exit code, and both streams in its log file.
    @Test func aProcessKeepsItsOutputItsLinesItsExitAndItsLog() async throws {
        let directory = TemporaryDirectory(prefix: "mcout")
        let process = try MeowProcess("/bin/sh", ["-c", "echo out; echo first >&2; printf last >&2; exit 3"], logPath: directory.file("log"))
        #expect(await process.waitForExit() == 3)
        #expect(process.standardOutput == "out\n")
        #expect(process.lines == ["first", "last"])
        let log = try String(contentsOfFile: directory.file("log"), encoding: .utf8)
        #expect(log.contains("out\n") && log.contains("first\n") && log.contains("last"))
    }

    /// A process a signal ends reports 128 + the signal, and its log says who ended it: a killed
    /// service writes no line of its own.
    @Test func aKilledProcessReportsTheSignalInItsStatusAndLog() async throws {
        let directory = TemporaryDirectory(prefix: "mckill")
        let process = try MeowProcess("/bin/sh", ["-c", "kill -9 $$"], logPath: directory.file("log"))
        #expect(await process.waitForExit() == 137)
        let log = try String(contentsOfFile: directory.file("log"), encoding: .utf8)
        #expect(log.contains(#""msg":"killed","signal":9"#))
    }

    /// The exit is what counts: it is seen while a grandchild still holds the output pipes open.
    @Test func anExitIsSeenWhileAGrandchildHoldsTheOutputOpen() async throws {
        let process = try MeowProcess("/bin/sh", ["-c", "sleep 60 & echo \"holder $!\" >&2; exit 4"])
        #expect(await process.waitForExit() == 4)
        #expect(process.isRunning == false)
        let holder = try #require(process.lines.first { $0.hasPrefix("holder ") }.flatMap { Int32($0.dropFirst(7)) })
        _ = kill(holder, SIGKILL)
        #expect(await process.waitForLine(containing: "never written", timeout: .seconds(30)) == nil)
    }

    /// A wait for the exit that runs out answers nil while the process runs, and a later wait
    /// still gets its status; waits side by side get it too.
    @Test func aWaitForTheExitRunsOutWhileTheProcessRuns() async throws {
        let process = try MeowProcess("/bin/sh", ["-c", "echo started >&2; exec sleep 60"])
        #expect(await process.waitForLine(containing: "started") != nil)
        #expect(await process.waitForExit(timeout: .milliseconds(20)) == nil)
        #expect(process.isRunning)
        async let first = process.waitForExit()
        async let second = process.waitForExit()
        process.signal(SIGKILL)
        #expect(await [first, second] == [137, 137])
    }

    /// One thread watches every process: one started while it waits on another, quiet one is
    /// seen at once (its lines, its exit), and processes side by side each keep their own.
    @Test func oneWatcherSeesEveryProcessStartedWhileItWaits() async throws {
        let quiet = try MeowProcess("/bin/sh", ["-c", "echo started >&2; exec sleep 60"])
        #expect(await quiet.waitForLine(containing: "started") != nil)
        let others = try (0..<4).map { try MeowProcess("/bin/sh", ["-c", "echo line-\($0) >&2; echo out-\($0); exit \(10 + $0)"]) }
        for (index, process) in others.enumerated() {
            #expect(await process.waitForExit(timeout: .seconds(10)) == Int32(10 + index))
            #expect(process.lines == ["line-\(index)"])
            #expect(process.standardOutput == "out-\(index)\n")
        }
        #expect(quiet.isRunning)
        quiet.kill()
        #expect(quiet.exitStatus == 137)
    }

    /// A child gets this process's environment with the caller's variables over it, and
    /// `MEOW_EXIT_WITH_PID` naming this process unless the caller sets it.
    @Test func aProcessGetsTheEnvironmentWithTheCallersVariablesOverIt() async throws {
        let home = try #require(ProcessInfo.processInfo.environment["HOME"])
        let script = #"printf '%s|%s|%s|%s' "$HOME" "$PATH" "$MEOW_X" "$MEOW_EXIT_WITH_PID""#
        let run = try await MeowProcess.run("/bin/sh", ["-c", script], environment: ["PATH": "/bin:/usr/bin", "MEOW_X": "x=1"])
        #expect(run.stdout == "\(home)|/bin:/usr/bin|x=1|\(getpid())")
        let chosen = try await MeowProcess.run("/bin/sh", ["-c", #"printf %s "$MEOW_EXIT_WITH_PID""#], environment: ["MEOW_EXIT_WITH_PID": "1"])
        #expect(chosen.stdout == "1")
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
