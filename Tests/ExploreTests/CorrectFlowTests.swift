import Foundation
import MeowExplore
import Testing

/// Requirement 6's other half: a correct flow — three devices of two users, edits racing on a
/// shared session, every fault kind an in-memory cluster takes — runs many schedules with no
/// false alarm. The suite runs 100; `EXPLORE_SCHEDULES=1000` runs the thousand.
@Suite(.serialized) struct CorrectFlowTests {
    @Test func aCorrectFlowPassesEverySchedule() async throws {
        let count = Int(ProcessInfo.processInfo.environment["EXPLORE_SCHEDULES"] ?? "") ?? 100
        let report = try await Explorer.explore(Flows.correct(), ExploreOptions(budget: .schedules(count), shrinkBudget: 60, clusters: 2))
        print(report)
        #expect(report.passed, "\(report)")
        #expect(report.schedules == count)
    }
}
