import MeowExplore
import Testing

@Suite struct SmokeTests {
    @Test func aSmallFlowRuns() async throws {
        let flow = Flow(name: "smoke", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .update("s1", fields: ["title"])]),
            FlowActor(device: "B", user: "olivia", steps: [.update("s1", fields: ["title"])]),
        ])
        let session = try await ExploreSession.start(flow)
        let run = try await session.run(seed: 7)
        print(run.lines.joined(separator: "\n"))
        print(run.historyJSONLines)
        print(run.record.final)
        print(run.failures)
        await session.stop()
    }
}
