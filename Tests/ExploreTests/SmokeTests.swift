import MeowExplore
import Testing

@Suite struct SmokeTests {
    @Test func aSmallFlowRuns() async throws {
        try await withSession(Flows.savesItsOwnCopy()) { session in
            let choices = ["step A", "send A", "fetch B", "step A", "step B", "send B", "fetch A", "step A"].compactMap(Choice.init)
            let run = try await session.run(choices: choices)
            print(run.lines.joined(separator: "\n"))
            print(run.failures)
            print(run.historyJSONLines)
        }
    }
}
