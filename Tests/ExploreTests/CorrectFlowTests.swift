import Foundation
import MeowExplore
import Testing

/// Requirement 6's other half: a correct flow — three devices of two users, edits racing on a
/// shared session, every fault kind an in-memory cluster takes — runs many schedules with no
/// false alarm. The suite runs seeds 1…100; `EXPLORE_SCHEDULES=N` runs seeds 1…N, and
/// `MEOWCARE_EXPLORE_SEEDS=A..B` runs seeds A…B (docs/EXPLORING.md gives the 1,000-seed figure).
@Suite(.serialized) struct CorrectFlowTests {
    @Test func aCorrectFlowPassesEverySchedule() async throws {
        let environment = ProcessInfo.processInfo.environment
        var seeds: ClosedRange<UInt64> = 1...(UInt64(environment["EXPLORE_SCHEDULES"] ?? "") ?? 100)
        if let range = environment["MEOWCARE_EXPLORE_SEEDS"] {
            let bounds = range.components(separatedBy: "..").compactMap { UInt64($0) }
            try #require(bounds.count == 2 && bounds[0] <= bounds[1], "MEOWCARE_EXPLORE_SEEDS is A..B (e.g. 400..1000), not \(range)")
            seeds = bounds[0]...bounds[1]
        }
        let count = seeds.count
        let report = try await Explorer.explore(Flows.correct(), ExploreOptions(firstSeed: seeds.lowerBound, budget: .schedules(count),
                                                                               shrinkBudget: 60, clusters: 2))
        print(report)
        #expect(report.passed, "\(report)")
        #expect(report.schedules == count)
    }
}
