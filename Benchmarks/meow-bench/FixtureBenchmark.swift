#if canImport(Glibc)
import Glibc
#endif
import CShim
import Foundation
import MeowCareCluster
import Synchronization

/// MeowCareTesting's fixture, end to end: an isolated cloud and two devices started and ready
/// (health), one op on each device, everything stopped and the directory removed — beside the
/// same three executables started with `--help` and waited for, in the same run: the cost of
/// starting the processes at all.
enum FixtureBenchmark {
    static func run(_ quick: Bool) throws {
        let rounds = quick ? 5 : 20
        let binaries = try ExecutableLocator.locate()
        let executables = [binaries.syncService, binaries.storeService, binaries.storeService]
        _ = try baseline(executables)  // warm the page cache for both sides
        _ = try awaitFixture()
        var helps = Latencies(), fixtures = Latencies()
        for _ in 0..<rounds {
            helps.add(try baseline(executables))
            fixtures.add(try awaitFixture())
        }
        print("fixture — cloud + 2 devices ready, one op each, all stopped; vs the three executables run with --help (\(rounds) rounds each, interleaved)")
        let widths = [34, 12, 12, 12, 12]
        print(row(["scenario", "--help ×3", "fixture", "ratio", "target"], widths: widths))
        for (label, p) in [("p50 ms", 0.5), ("p90 ms", 0.9)] {
            let base = helps.percentile(p) / 1000, fixture = fixtures.percentile(p) / 1000
            print(row([label, format(base), format(fixture), format(fixture / base, 2) + "×", p == 0.5 ? "≤ 1.5×" : ""], widths: widths))
            Figures.run.add(p == 0.5 ? "fixture.start" : "fixture.start.p90", fixture, baseline: base, unit: "ms")
        }
        print("")
    }

    /// The three executables with `--help`, started at once and waited for: nanoseconds.
    static func baseline(_ executables: [String]) throws -> UInt64 {
        let start = now()
        var pids: [pid_t] = []
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        for executable in executables {
            let argv = [strdup(executable), strdup("--help"), nil]
            defer { argv.forEach { free($0) } }
            let pid = meow_spawn(executable, argv, environ, null, null, -1)
            guard pid > 0 else { throw BenchError("could not start \(executable): \(String(cString: strerror(errno)))") }
            pids.append(pid)
        }
        for pid in pids {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        return now() - start
    }

    /// One fixture's whole life, timed: nanoseconds.
    static func awaitFixture() throws -> UInt64 {
        let outcome = Mutex<Result<UInt64, MeowCareError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let start = now()
            do throws(MeowCareError) {
                let cluster = try await MeowCluster.start(MeowClusterConfiguration(devices: ["A", "B"]))
                for device in cluster.devices { _ = try await device.count("CareSession") }
                await cluster.stop()
                outcome.withLock { $0 = .success(now() - start) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }
}
