import MeowExplore
import Testing

@Suite struct SmokeTests {
    @Test func aSmallFlowRuns() async throws {
        try await withSession(Flows.correct()) { session in
            for seed in UInt64(1)...8 {
                let clock = ContinuousClock(), start = clock.now
                let run = try await session.run(seed: seed)
                print("seed \(seed): \(clock.now - start) \(run.choices.filter(\.isFault).map(\.description))")
            }
        }
    }
}
