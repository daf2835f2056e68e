import MeowExplore
import Testing

/// Failures the explorer found in correct flows and nobody has settled yet: each replays its
/// shrunk schedule. Enabled once the pair (or the checker's model) is fixed.
@Suite struct OpenFindingsTests {
    /// Seed 359 of CorrectFlowTests' flow (1,000-schedule run): A shares s1 (its record moves to
    /// the share's zone) and edits its title; B, whose push was lost so it still holds s1 in the
    /// old zone, and whose clock is 30 s behind, edits the title after (an earlier stamp). The
    /// documented per-field rule gives the later stamp, A's; the cloud and every device end with
    /// B's. Either the mirror's path for an edit of a moved record skips the stamp comparison,
    /// or the reference model reads the move differently: not yet known.
    @Test(.disabled("open finding: seed 359, an edit of a moved record against a later edit (conflicts)"))
    func anEditOfAMovedRecordMeetsALaterEdit() async throws {
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
