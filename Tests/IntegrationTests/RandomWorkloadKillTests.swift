import Foundation
import MeowWire
import TestSupport
import Testing

/// kill -9 of every process under a seeded random workload on an app's own model (TripLog: trips,
/// days, photos, tags with many-to-many): the owner's two devices and a participant's insert,
/// update and delete, move photos between days (to-many), tag and untag photos (many-to-many),
/// and the owner shares trips, changes the participant's permission and stops sharing while she
/// accepts. Each round arms one kill — a device's store-service or the sync-service, at a random
/// hit of a named point or by SIGKILL on a random acknowledgement, the call in flight — and
/// restarts the victim after it. Operations run one after another, each on a device that has
/// first synced and then sends what it wrote, so a model kept from the acknowledged operations
/// says what every device holds; an operation whose reply a kill took must show all of its
/// change or none. After the rounds: the devices and the cloud hold the model exactly, no id
/// twice, every trip's graph in one zone, the participant's permission as last acknowledged,
/// every SQLite file passes integrity_check.
///
/// Many-to-many edits stay in trips never shared, each tag with the photos of one trip: where a
/// link made after sharing goes, and links across zones, are rules of their own, tested apart;
/// the participant's tags are checked as her photos name them.
///
/// `MEOW_KILL_SEED`, `MEOW_KILL_ITERATIONS` and `MEOW_KILL_ROUNDS` (kills per iteration) widen a
/// run (scripts/reliability.sh); CI runs 2 iterations of 4 kills. Each kill prints one
/// `kill-workload:` line, each iteration one `kill-workload-iteration:` line.
@Suite("Kill -9 under a random workload of edits, links and sharing", .serialized)
struct RandomWorkloadKillTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seed = environment["MEOW_KILL_SEED"].flatMap { UInt64($0) } ?? 0x574F_524B   // "WORK"
    /// `MEOW_KILL_ITERATION=N` runs that one iteration alone (a failure's line names it).
    static let iterations = environment["MEOW_KILL_ITERATION"].flatMap { Int($0) }.map { [$0] }
        ?? Array(0..<(environment["MEOW_KILL_ITERATIONS"].flatMap { Int($0) } ?? 2))
    static let rounds = environment["MEOW_KILL_ROUNDS"].flatMap { Int($0) } ?? 4
    /// Operations a round runs before a kill still armed is delivered at rest.
    static let operationsPerRound = 8

    @Test("kill -9 of any process under inserts, updates, deletes, link changes and sharing: nothing acknowledged lost or doubled, devices and cloud converge",
          arguments: iterations)
    func randomWorkload(iteration: Int) async throws {
        let workload = try KillWorkload(seed: Self.seed, iteration: iteration)
        do {
            try await workload.harness.startAll()
            try await workload.warmUp()
            for _ in 0..<Self.rounds { try await workload.round(operations: Self.operationsPerRound) }
            try await workload.settleAndCheck()
        } catch {
            await workload.harness.stopAll()
            throw error
        }
        await workload.harness.stopAll()
        let problems = try await workload.harness.integrityProblems()
        #expect(problems.isEmpty, "\(workload.tag): integrity_check: \(problems)")
        print("kill-workload-iteration: seed=\(Self.seed) iteration=\(iteration) kills=\(workload.kills) operations=\(workload.operations) "
              + "acknowledged=\(workload.acknowledged) unknown=\(workload.unknown) unknownApplied=\(workload.unknownApplied) objects=\(workload.model.objects.count) "
              + "shares=\(workload.model.shares.count) kinds=\(workload.performed.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","))")
    }
}
