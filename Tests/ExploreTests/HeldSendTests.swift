import MeowExplore
import Testing

/// A send held at the cloud takes effect when it is released, so its history entry is written
/// there: entries stay in the order their requests took effect. Seed 203 of the correct flow,
/// shrunk: B (its clock a day ahead) edits e1 and its send is held; A fetches, edits e1 and only
/// then B's send is released. B's later stamp wins the field when A's edit reaches the cloud.
/// With B's entry at the hold, the checker replayed B's commit before A's fetch and called A's
/// edit lost (a false durability failure).
@Suite struct HeldSendTests {
    @Test func aHeldSendIsRecordedWhereItTookEffect() async throws {
        var flow = Flows.correct()
        flow.actors[0].steps = [.insert("s1", entity: "CareSession", fields: ["title"]), .insert("e1", entity: "CareEvent", fields: ["note"]),
                                .link("e1", "session", to: "s1"), .shareCreate("team"), .update("e1", fields: ["note"])]
        flow.actors[1].steps = [.update("e1", fields: ["note", "value"]), .update("s1", fields: ["title"]), .update("e1", fields: ["note", "value"])]
        flow.actors[2].steps = []
        let schedule = "step A, step A, step B, send B, step A, step B, send B, step A, push B delivered, fault clock-jump B 86400, step B, "
            + "push P delivered, send A, fetch P, fault hold B, send A, send P, fetch A, step A, release B"
        try await withSession(flow) { session in
            let run = try await session.run(choices: schedule.components(separatedBy: ", ").compactMap(Choice.init), seed: 203)
            #expect(run.choices.count == 20)
            #expect(run.failures.isEmpty, "\(run.failures)")
            let history = run.record.history
            let aEdit = try #require(history.lastIndex { $0.actor == "A" && $0.op == HistoryOp.update })
            let bHeldSend = try #require(history.lastIndex { $0.actor == "B" && $0.op == HistoryOp.send })
            #expect(bHeldSend > aEdit)
            #expect(history[bHeldSend].invoke < history[aEdit].invoke)
            let final = try #require(run.record.final.devices.first { $0.name == "A" }?.objects.first { $0.entity == "CareEvent" })
            #expect(final.values["note"]?.stringValue?.hasPrefix("note·B·") == true)
        }
    }
}
