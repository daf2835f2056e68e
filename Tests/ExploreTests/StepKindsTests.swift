import MeowExplore
import Testing

/// Requirement 1's steps beyond edits: participant and permission changes, a share stopped and
/// left, an account switch — correct flows that must pass every schedule.
@Suite(.serialized) struct StepKindsTests {
    static func explore(_ flow: Flow, schedules: Int = 30) async throws -> ExploreReport {
        let report = try await Explorer.explore(flow, ExploreOptions(budget: .schedules(schedules), faults: ExploreOptions.noFaults, shrinkBudget: 60))
        print(report)
        return report
    }

    @Test func participantsAndPermissionsChange() async throws {
        let flow = Flow(name: "sharing churn", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]),
                                                           .insert("e1", entity: "CareEvent", fields: ["note"]), .link("e1", "session", to: "s1"),
                                                           .shareCreate("team"), .addParticipant("team", user: "quinn", permission: "readOnly"),
                                                           .setPermission("team", user: "pablo", permission: "readOnly"),
                                                           .setPermission("team", user: "pablo", permission: "readWrite"),
                                                           .removeParticipant("team", user: "quinn"), .update("e1", fields: ["note"])]),
            FlowActor(device: "P", user: "pablo", steps: [.shareAccept("team"), .update("e1", fields: ["value"]), .update("e1", fields: ["note"])]),
        ], shares: [ShareSpec(name: "team", root: "s1", participants: [.init(user: "pablo", permission: "readWrite")])])
        let report = try await Self.explore(flow)
        #expect(report.passed, "\(report)")
    }

    @Test func aShareStoppedAndLeft() async throws {
        let flow = Flow(name: "stop and leave", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .shareCreate("team"),
                                                           .update("s1", fields: ["title"]), .shareStop("team")]),
            FlowActor(device: "P", user: "pablo", steps: [.shareAccept("team"), .update("s1", fields: ["title"]), .shareLeave("team")]),
        ], shares: [ShareSpec(name: "team", root: "s1", participants: [.init(user: "pablo", permission: "readWrite")])])
        let report = try await Self.explore(flow)
        #expect(report.passed, "\(report)")
    }

    @Test func anAccountSwitch() async throws {
        let flow = Flow(name: "account switch", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .update("s1", fields: ["title"])]),
            FlowActor(device: "B", user: "olivia", steps: [.update("s1", fields: ["title"]), .accountSwitch(to: "pablo"),
                                                           .insert("s2", entity: "CareSession", fields: ["title"])]),
        ])
        let report = try await Self.explore(flow)
        #expect(report.passed, "\(report)")
    }
}
