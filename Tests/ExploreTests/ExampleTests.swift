import MeowExplore
import Testing

/// The smallest Swift flow of docs/EXPLORING.md ("### In Swift"), run as shown there.
@Suite struct ExampleTests {
    @Test func aFlowExploredFromSwift() async throws {
        // example: explore-a-flow
        var flow = Flow(name: "two phones edit one session", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .update("s1", fields: ["title"])]),
            FlowActor(device: "B", user: "olivia", steps: [.update("s1", fields: ["title"])]),
        ])
        flow.invariants.append(Invariant("one session per device") { run in
            run.final.devices.filter { device in device.objects.filter { $0.entity == "CareSession" }.count > 1 }
                .map { "\($0.name) shows the session twice" }
        })
        let report = try await Explorer.explore(flow, ExploreOptions(budget: .schedules(20)))
        #expect(report.passed, "\(report)")
        // end example
        #expect(report.schedules == 20)
    }
}
