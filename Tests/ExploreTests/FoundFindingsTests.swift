import MeowExplore
import Testing

/// Failures the explorer found in correct flows, each a bug of the pair (or of the runner):
/// each replays its shrunk schedule, which must pass every check.
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

    /// Seed 564 of CorrectFlowTests' flow: A's insert was deferred an hour (requestRateLimited),
    /// and a drop-after-commit armed for A was left for its next records.modify: share.create's
    /// move. The move committed and its reply was lost; share.create must succeed (the share
    /// exists), or A later creates a second copy of s1 in the core-data zone.
    @Test func aShareCreateWhoseMoveReplyWasLost() async throws {
        var flow = Flows.correct()
        flow.actors[0].steps = [.insert("s1", entity: "CareSession", fields: ["title"]), .shareCreate("team")]
        flow.actors[1].steps = []
        flow.actors[2].steps = []
        let schedule = "step A, fault transient B requestRateLimited 3600, fault drop-after-commit A, step A"
        try await withSession(flow) { session in
            let run = try await session.run(choices: schedule.components(separatedBy: ", ").compactMap(Choice.init), seed: 564)
            #expect(run.failures.isEmpty, "\(run.failures.map(\.description).joined(separator: "\n"))")
            let create = try #require(run.record.history.first { $0.op == "share.create" })
            #expect(create.outcome.result?["zoneName"] != nil, "\(create.outcome)")
        }
    }

    /// The boundary of seed 359's rule (seed 469 of the same flow, which a first version of the
    /// fix broke): B fetched e1 while its session s1 was not in the cloud yet (A's insert was
    /// deferred an hour), so B's e1 has no session although the record names s1. share.create
    /// then moves both; B merges the moved e1 as a concurrent copy. B never edited the session
    /// (its stamp is the record's), so the moved copy's session stands; B must not send its
    /// empty one back.
    @Test func aRelationshipTheDeviceCouldNotHoldIsNoEdit() async throws {
        var flow = Flows.correct()
        flow.actors[0].steps = [.insert("s1", entity: "CareSession", fields: ["title"]), .insert("e1", entity: "CareEvent", fields: ["note"]),
                                .link("e1", "session", to: "s1"), .shareCreate("team")]
        flow.actors[1].steps = []
        flow.actors[2].steps = []
        let schedule = "send P, step A, fault transient A requestRateLimited 3600, send P, send A, send B, step A, step A, send A, send A, "
            + "fetch B, send A, fetch A, send P, push P delivered, push B delivered, send A, step A, send A, push P delivered, send A, "
            + "fetch P, fetch A"
        try await withSession(flow) { session in
            let run = try await session.run(choices: schedule.components(separatedBy: ", ").compactMap(Choice.init), seed: 469)
            #expect(run.failures.isEmpty, "\(run.failures.map(\.description).joined(separator: "\n"))")
        }
    }
}
