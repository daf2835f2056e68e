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

/// A send that leaves writes behind (deferred by a retry-after) names the records it did carry:
/// its result's `carried`, from the cloud's log. Seed 324 of the correct flow, shrunk: A's send
/// carries its new title while its earlier note edit waits out a retry-after; B fetches the
/// title and edits it, so B's edit rightly wins. Without `carried` the checker took the send
/// for the note and called B's win a wrong conflict outcome.
@Suite struct CarriedRecordsTests {
    @Test func aSendNamesTheRecordsItCarried() async throws {
        var flow = Flows.correct()
        flow.actors[0].steps = [.insert("s1", entity: "CareSession", fields: ["title"]), .insert("e1", entity: "CareEvent", fields: ["note"]),
                                .link("e1", "session", to: "s1"), .update("e1", fields: ["note"]), .update("s1", fields: ["title"])]
        flow.actors[1].steps = [.update("e1", fields: ["note", "value"]), .update("s1", fields: ["title"]), .update("e1", fields: ["note", "value"]),
                                .update("s1", fields: ["title"])]
        flow.actors[2].steps = []
        let schedule = "step A, send A, push P delivered, step A, step A, send A, fetch P, fault clock-jump A 86400, fetch B, fetch B, step B, "
            + "push B delivered, step B, send B, send P, push A delivered, send A, step A, fault transient A requestRateLimited 30, "
            + "push P delivered, send A, step A, send A, push B delivered, send A, push P delivered, send P, fetch A, send A, send A, step B, "
            + "send A, send B, step B"
        try await withSession(flow) { session in
            let run = try await session.run(choices: schedule.components(separatedBy: ", ").compactMap(Choice.init), seed: 324)
            #expect(run.failures.isEmpty, "\(run.failures)")
            let titleEdit = try #require(run.record.history.first { $0.actor == "A" && $0.op == HistoryOp.update && $0.params["values"]?["title"] != nil })
            let session1 = try #require(titleEdit.params["uuid"])
            let carrying = run.record.history.first { entry in
                entry.index > titleEdit.index && entry.actor == "A" && entry.op == HistoryOp.send
                    && (entry.outcome.result?["carried"]?.arrayValue ?? []).contains(session1)
            }
            #expect(carrying?.outcome.result?["deferred"] == 1, "the send that carried A's title left the note deferred")
        }
    }
}
