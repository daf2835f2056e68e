import MeowExplore
import MeowHistory
import Testing

/// The Swift flow docs/EXPLORING.md shows ("### In Swift"): the page quotes the code between the
/// example markers (scripts/docs-check.py compares them), and this test runs it.
@Suite("docs/EXPLORING.md's Swift flow", .serialized)
struct ExploringDocTests {
    @Test("the page's Swift flow explores, passes and replays a seed")
    func swiftFlow() async throws {
        // example: swift-flow
        var flow = Flow(name: "two devices edit one session", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]),
                                                           .update("s1", fields: ["title"])]),
            FlowActor(device: "B", user: "olivia", steps: [.custom("readTitle"), .update("s1", fields: ["title"])]),
        ])
        // The team's own step: any code over the actor's device; what it answers goes in the history.
        flow.bind("readTitle") { context in
            ["title": try await context.object("s1")?["title"] ?? .null]
        }
        // The team's invariant: a function over the run (history and final state), one sentence per violation.
        flow.invariants.append(Invariant("oneSessionEverywhere") { run in
            run.final.devices.compactMap { device in
                let sessions = device.objects.filter { $0.entity == "CareSession" }.count
                return sessions == 1 ? nil : "device \(device.name) ends with \(sessions) sessions"
            }
        })
        let report = try await Explorer.explore(flow, ExploreOptions(budget: .schedules(30)))
        #expect(report.passed, "\(report)")
        let again = try await Explorer.replay(flow, seed: 3)  // seed 3's schedule and history, again
        // end example
        #expect(again.seed == 3)
        #expect(again.history.contains { $0.op == "custom.readTitle" })
    }
}
