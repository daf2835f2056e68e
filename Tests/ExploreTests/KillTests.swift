import MeowExplore
import Testing

/// Kills and crash points (SQLite devices): a send held at the cloud whose device is killed
/// meanwhile has an outcome no client saw; the explorer settles it from the cloud's request
/// log, and the run still passes every check.
@Suite(.serialized) struct KillTests {
    static let sqlite = ExploreOptions(faults: [.kill: 2, .crashPoint: 2, .holdAndDeliver: 2, .dropAfterCommit: 1], faultRate: 0.25,
                                       persistence: .sqlite)

    @Test func aSendWhoseDeviceDiedIsResolvedFromTheCloudsLog() async throws {
        let flow = Flow(name: "killed mid-send", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"])]),
            FlowActor(device: "B", user: "olivia", steps: []),
        ])
        try await withSession(flow, Self.sqlite) { session in
            let run = try await session.run(choices: ["step A", "fault hold A", "fault kill A"].compactMap(Choice.init))
            #expect(run.choices.count == 3, "\(run.lines)")
            let send = try #require(run.record.history.first { $0.op == HistoryOp.send && $0.actor == "A" })
            guard case let .resolved(committed, evidence) = send.outcome else {
                Issue.record("the killed send's outcome is \(send.outcome), not resolved from the log")
                return
            }
            #expect(committed, "\(evidence)")
            #expect(evidence.contains("records.modify ok"))
            #expect(!send.cloudRequests.isEmpty)
            #expect(run.record.history.contains { $0.op == HistoryOp.kill } && run.record.history.contains { $0.op == HistoryOp.restart })
            #expect(run.failures.isEmpty, "\(run.failures)")
        }
    }

    /// A sharing step whose device died mid-request is settled by its own cloud request: here
    /// share.create's first send dies after the cloud's reply, before the share's move, so the
    /// log shows no records.modify creating a share and the step did not take effect.
    @Test func aShareCreateWhoseDeviceDiedIsResolvedFromTheCloudsLog() async throws {
        let flow = Flow(name: "killed mid-share", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .shareCreate("team")]),
            FlowActor(device: "P", user: "pablo", steps: []),
        ], shares: [ShareSpec(name: "team", root: "s1", participants: [.init(user: "pablo", permission: "readWrite")])])
        try await withSession(flow, Self.sqlite) { session in
            let run = try await session.run(choices: ["step A", "fault crash A mirror.afterServerReply", "step A"].compactMap(Choice.init))
            let create = try #require(run.record.history.first { $0.op == HistoryOp.shareCreate })
            guard case let .resolved(committed, evidence) = create.outcome else {
                Issue.record("the killed share.create's outcome is \(create.outcome), not resolved from the log")
                return
            }
            #expect(!committed, "\(evidence)")
            #expect(evidence.contains("records.modify"), "\(evidence)")
            #expect(run.failures.isEmpty, "\(run.failures)")
        }
    }

    @Test func schedulesWithKillsAndCrashPointsPass() async throws {
        try await withSession(Flows.correct(stepsPerActor: 2), Self.sqlite) { session in
            var kills = 0, crashes = 0
            for seed in UInt64(1)...12 {
                let run = try await session.run(seed: seed)
                #expect(run.failures.isEmpty, "seed \(seed):\n\(run.failures.map(\.description).joined(separator: "\n"))\n\(run.lines.joined(separator: "\n"))")
                kills += run.choices.filter { if case .fault(.kill) = $0 { true } else { false } }.count
                crashes += run.choices.filter { if case .fault(.crash) = $0 { true } else { false } }.count
                #expect(!run.record.history.contains { if case .unknown = $0.outcome { true } else { false } })
            }
            #expect(kills > 0 && crashes > 0, "kills \(kills), crashes \(crashes)")
        }
    }
}
