import MeowExplore
import Testing

@Suite struct SmokeTests {
    @Test func aSmallFlowRuns() async throws {
        let report = try await Explorer.explore(Flows.correct(), ExploreOptions(budget: .schedules(4), shrinkBudget: 0))
        print(report)
        if let failure = report.failure {
            print(failure.original.lines.joined(separator: "\n"))
            print(failure.original.failures)
            print(failure.original.historyJSONLines)
        }
    }
}
