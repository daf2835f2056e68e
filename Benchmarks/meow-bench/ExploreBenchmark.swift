#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowCareCluster
import MeowExplore
import Synchronization

/// The explorer's throughput (issue #42, requirement 7): a 3-device, 30-step flow in memory,
/// schedules per second on one cluster reset between runs, each run judged by the standard
/// checks — beside the fixture's own start-up (a cluster of the same three devices started and
/// stopped), measured in the same run. Target: ≥ 20 schedules/s.
enum ExploreBenchmark {
    static func run(_ quick: Bool) throws {
        let schedules = quick ? 20 : 200
        print("explore — 3 devices, 30 steps, in memory: schedules/s on one reused cluster, judged by the standard checks (\(schedules) schedules each)")
        let widths = [34, 14, 14, 16, 12, 12]
        print(row(["scenario", "schedules/s", "ms/schedule", "CPU ms/schedule", "start ms", "target"], widths: widths))
        for clusters in [1, 2] {
            for (label, faults) in [("no faults", ExploreOptions.noFaults), ("default faults", ExploreOptions.defaultFaults)] {
                let (perSecond, cpu, startMilliseconds) = try measure(schedules: schedules, faults: faults, clusters: clusters)
                print(row(["\(label), \(clusters) cluster\(clusters == 1 ? "" : "s")", format(perSecond, 1), format(1000 / perSecond, 1),
                           format(cpu, 1), format(startMilliseconds, 0), "≥ 20/s"], widths: widths))
            }
        }
        print("CPU ms/schedule: user + system time of this process and every service, per schedule: what a schedule costs")
        print("whatever else the machine runs (2 cores give at most 2000 / that schedules per second).")
        print("")
    }

    /// Three devices of two users, ten steps each: edits on a shared session from every device.
    static func flow() -> Flow {
        var a: [Step] = [.insert("s1", entity: "CareSession", fields: ["title"]), .insert("e1", entity: "CareEvent", fields: ["note"]),
                         .link("e1", "session", to: "s1"), .shareCreate("team")]
        var b: [Step] = []
        var p: [Step] = [.shareAccept("team")]
        while a.count < 10 { a.append(.update(a.count % 2 == 0 ? "s1" : "e1", fields: a.count % 2 == 0 ? ["title"] : ["note"])) }
        while b.count < 10 { b.append(.update(b.count % 2 == 0 ? "e1" : "s1", fields: b.count % 2 == 0 ? ["value"] : ["title"])) }
        while p.count < 10 { p.append(.update("e1", fields: ["note"])) }
        return Flow(name: "bench", actors: [
            FlowActor(device: "A", user: "olivia", steps: a),
            FlowActor(device: "B", user: "olivia", steps: b),
            FlowActor(device: "P", user: "pablo", steps: p),
        ], shares: [ShareSpec(name: "team", root: "s1", participants: [.init(user: "pablo", permission: "readWrite")])])
    }

    /// Schedules per second (`Explorer.explore` over `clusters` clusters, start-up excluded),
    /// and one cluster's start-up in milliseconds.
    static func measure(schedules: Int, faults: [FaultKind: Double], clusters: Int) throws -> (Double, Double, Double) {
        let outcome = Mutex<Result<(Double, Double, Double), any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let clock = ContinuousClock()
                let options = ExploreOptions(budget: .schedules(schedules), faults: faults, clusters: clusters)
                var sessions: [ExploreSession] = []
                let started = clock.now
                for index in 0..<clusters { sessions.append(try await ExploreSession.start(flow(), options, cluster: clusters > 1 ? index : nil)) }
                let startup = (clock.now - started) / clusters
                for session in sessions { _ = try await session.run(seed: 0) }  // warm-up
                let pids = sessions.flatMap { session in
                    ([session.cluster.cloudProcess] + session.cluster.devices.map { session.cluster.process(of: $0.name) }).compactMap { $0?.pid }
                }
                let cpuBefore = cpuMilliseconds(pids)
                let report = try await ExploreSession.explore(on: sessions)
                let cpu = (cpuMilliseconds(pids) - cpuBefore) / Double(max(1, report.schedules))
                for session in sessions { await session.stop() }
                if let failure = report.failure { throw BenchError("seed \(failure.seed) failed \(failure.check):\n\(report)") }
                outcome.withLock { $0 = .success((report.schedulesPerSecond, cpu, seconds(startup) * 1000)) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    /// User and system CPU time so far of this process and of `pids` (/proc/PID/stat), in ms.
    static func cpuMilliseconds(_ pids: [pid_t]) -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        var total = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        for pid in pids {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = text.lastIndex(of: ")") else { continue }
            // Fields after "(comm) ": state is the 3rd field; utime and stime the 14th and 15th.
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            total += (user + system) / ticks * 1000
        }
        return total
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
