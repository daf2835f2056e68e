#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import Synchronization
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// kill -9 at random moments, many times: two writers save batches of events on device A while a
/// third client keeps A sending to the cloud; a seeded plan kills A or the sync-service — at a
/// named point hit a random number of times (mid-save, after a commit, mid-batch on the server,
/// after the server's reply) or by SIGKILL from whichever client gets the k-th acknowledgement.
/// After the restart: every acknowledged batch is there, an unacknowledged one is all or nothing,
/// nothing is duplicated, A, the cloud and B converge, and every SQLite file passes
/// integrity_check.
///
/// `MEOW_KILL_SEED` and `MEOW_KILL_ITERATIONS` widen a local run (scripts/reliability.sh);
/// CI runs 5 iterations of the fixed seed. Each iteration prints one `random-kill:` line.
@Suite("Kill -9 at random moments", .serialized)
struct RandomKillTests {
    typealias Deployment = CrashHarnessTests.Deployment

    static let environment = ProcessInfo.processInfo.environment
    static let seed = environment["MEOW_KILL_SEED"].flatMap { UInt64($0) } ?? 0x4B49_4C4C   // "KILL"
    static let iterations = Array(0..<(environment["MEOW_KILL_ITERATIONS"].flatMap { Int($0) } ?? 5))

    static let writers = 2
    static let batchesPerWriter = 6

    /// Where and when one iteration kills.
    struct Plan: CustomStringConvertible {
        enum Victim: String { case device = "A", cloud }
        var victim: Victim
        /// A named point and its hit (`MEOW_CRASH_AT`), or nil for a SIGKILL after `killAfterAcks`.
        var crashAt: String?
        var killAfterAcks: Int?
        var batchSize: Int

        static func random(_ rng: inout HostileInputTests.Generator) -> Plan {
            let batchSize = Int.random(in: 1...12, using: &rng)
            let saves = RandomKillTests.writers * RandomKillTests.batchesPerWriter
            let events = saves * batchSize
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: return Plan(victim: .device, crashAt: "store.midSave:\(Int.random(in: 1...events / 2 + 1, using: &rng))", batchSize: batchSize)
            case 1: return Plan(victim: .device, crashAt: "store.afterSaveCommit:\(Int.random(in: 1...saves / 2, using: &rng))", batchSize: batchSize)
            case 2: return Plan(victim: .device, crashAt: "mirror.afterServerReply:\(Int.random(in: 1...2, using: &rng))", batchSize: batchSize)
            case 3: return Plan(victim: .cloud, crashAt: "sync.midBatch:\(Int.random(in: 1...events / 2 + 1, using: &rng))", batchSize: batchSize)
            case 4: return Plan(victim: .cloud, crashAt: "sync.afterCommit:\(Int.random(in: 1...4, using: &rng))", batchSize: batchSize)
            default:
                return Plan(victim: Bool.random(using: &rng) ? .device : .cloud,
                            killAfterAcks: Int.random(in: 1...saves, using: &rng), batchSize: batchSize)
            }
        }

        var description: String {
            "victim=\(victim.rawValue) at=\(crashAt ?? "sigkill-after-\(killAfterAcks ?? 0)-acks") batch=\(batchSize)"
        }
    }

    /// What the writers, the sender and the killer of one iteration share.
    final class Progress: Sendable {
        private struct State {
            var acknowledgements = 0
            var writersRunning = RandomKillTests.writers
            var acknowledged: [Int] = []
            var unacknowledged: [Int] = []
            var killed = false
        }
        private let state = Mutex(State())
        private let killAfter: Int?
        private let victim: MeowProcess?

        init(killAfter: Int?, victim: MeowProcess?) {
            self.killAfter = killAfter
            self.victim = victim
        }

        /// Counts an acknowledgement; the client getting the k-th one kills the victim at once,
        /// while the other clients' requests are in flight.
        func acknowledge(batch: Int? = nil) {
            let fire = state.withLock { state in
                state.acknowledgements += 1
                if let batch { state.acknowledged.append(batch) }
                return state.acknowledgements == killAfter
            }
            if fire {
                state.withLock { $0.killed = true }
                victim?.signal(SIGKILL)
            }
        }

        func failed(batch: Int) { state.withLock { $0.unacknowledged.append(batch) } }
        func writerFinished() { state.withLock { $0.writersRunning -= 1 } }
        var writersRunning: Bool { state.withLock { $0.writersRunning > 0 } }
        var killed: Bool { state.withLock { $0.killed } }
        var batches: (acknowledged: [Int], unacknowledged: [Int]) { state.withLock { ($0.acknowledged, $0.unacknowledged) } }
    }

    @Test("kill -9 at a random moment, restart: no acknowledged write lost, none duplicated, devices converge with the cloud, integrity ok",
          arguments: iterations)
    func randomKill(iteration: Int) async throws {
        var rng = HostileInputTests.Generator(state: Self.seed &+ UInt64(iteration) &* 0x9E37_79B9)
        let plan = Plan.random(&rng)
        let deployment = try Deployment()
        try await deployment.startCloud(crashAt: plan.victim == .cloud ? plan.crashAt : nil)
        try await deployment.startDevice("A", crashAt: plan.victim == .device ? plan.crashAt : nil)
        try await deployment.startDevice("B")
        let victim = try #require(plan.victim == .device ? deployment.devices["A"] : deployment.cloud)
        let progress = Progress(killAfter: plan.killAfterAcks, victim: victim)

        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<Self.writers {
                group.addTask {
                    defer { progress.writerFinished() }
                    guard let client = try? await deployment.client("A") else { return }
                    defer { client.close() }
                    for index in 0..<Self.batchesPerWriter {
                        let batch = writer * 1000 + index
                        guard await CrashHarnessTests.save(client, batch: batch, count: plan.batchSize) else {
                            progress.failed(batch: batch)
                            return
                        }
                        progress.acknowledge(batch: batch)
                    }
                }
            }
            group.addTask {
                // Keeps A sending while the writers run, then once more with everything saved.
                guard let client = try? await deployment.client("A") else { return }
                defer { client.close() }
                var last = false
                while !last {
                    last = !progress.writersRunning
                    do { _ = try await client.call("sync.send", [:]) } catch { return }
                    progress.acknowledge()
                }
            }
        }
        // A named point past every request, or a k beyond the acknowledgements, kills here: at rest.
        let killedAtRest = !progress.killed && !victim.lines.contains { $0.contains("crash point reached") }
        if killedAtRest { victim.signal(SIGKILL) }
        #expect(await victim.waitForExit() == 128 + 9, "\(plan): the victim died as kill -9 would")

        if plan.victim == .device { try await deployment.startDevice("A") } else { try await deployment.startCloud() }
        let (acknowledged, unacknowledged) = progress.batches
        let ids = try await deployment.eventIDs("A")
        let present = Set(ids)
        for batch in acknowledged {
            #expect((0..<plan.batchSize).allSatisfy { present.contains("b\(batch)-\($0)") }, "\(plan): acknowledged batch \(batch) lost")
        }
        var unacknowledgedKept = 0
        for batch in unacknowledged {
            let kept = (0..<plan.batchSize).filter { present.contains("b\(batch)-\($0)") }.count
            #expect(kept == 0 || kept == plan.batchSize, "\(plan): interrupted batch \(batch) is half there: \(kept) of \(plan.batchSize)")
            if kept > 0 { unacknowledgedKept += 1 }
        }
        #expect(present.count == ids.count, "\(plan): duplicates on A")
        #expect(ids.count == (acknowledged.count + unacknowledgedKept) * plan.batchSize, "\(plan): events nobody saved")
        try await deployment.expectConvergence(expected: ids.count)
        print("random-kill: seed=\(Self.seed) iteration=\(iteration) \(plan) atRest=\(killedAtRest) acknowledged=\(acknowledged.count) unacknowledged=\(unacknowledged.count) kept=\(unacknowledgedKept) events=\(ids.count)")
    }
}
