import MeowExplore
import Testing

/// Failures the explorer found in correct flows, each a bug of the pair (or of the runner)
/// now fixed: each replays its shrunk schedule, which must pass every check.
@Suite struct FoundFindingsTests {
    /// Seed 359 of CorrectFlowTests' flow (1,000-schedule run): A shares s1 (the share saves s1
    /// and e1 where they are, at new tags, then moves them into its zone, the receipt naming the
    /// new tags) and edits s1's title; B, whose push was lost so it still holds both in the old
    /// zone at the older tags, and whose clock is 30 s behind, edits e1's note and sends it. The
    /// update meets unknownItem and B fetches the moved e1, a copy made without B's: its note is
    /// as B last fetched it, so A never changed it, and B's edit stands although A's insert
    /// has the later stamp. (B's title edit after that fetch is a later one and rightly wins.)
    @Test func anEditOfAMovedRecordMeetsALaterEdit() async throws {
        var flow = Flows.correct()
        flow.actors[0].steps = [.insert("s1", entity: "CareSession", fields: ["title"]), .insert("e1", entity: "CareEvent", fields: ["note"]),
                                .link("e1", "session", to: "s1"), .shareCreate("team"), .update("s1", fields: ["title"])]
        flow.actors[1].steps = [.update("e1", fields: ["note", "value"]), .update("s1", fields: ["title"])]
        flow.actors[2].steps = []
        let schedule = "step A, step A, step A, send A, fetch P, send P, fetch B, push B delivered, send B, push P delivered, step A, "
            + "push P delivered, fault clock-jump B -30, push B lost, step A, step B, send A, send B, step B"
        try await withSession(flow) { session in
            let run = try await session.run(choices: schedule.components(separatedBy: ", ").compactMap(Choice.init), seed: 359)
            #expect(run.failures.isEmpty, "\(run.failures.map(\.description).joined(separator: "\n"))")
        }
    }
}
