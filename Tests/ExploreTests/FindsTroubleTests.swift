import MeowCareTesting
import MeowExplore
import Testing

/// Requirement 6: app logic that is wrong only in some orders is found within a bounded number
/// of schedules and shrunk to a small schedule that fails the same check; the fixed app passes
/// the same schedules.
@Suite(.serialized) struct FindsTroubleTests {
    static func expectFound(_ flow: Flow, check: String, budget: Int, faults: [FaultKind: Double] = ExploreOptions.noFaults) async throws -> ExploreFailure? {
        let report = try await Explorer.explore(flow, ExploreOptions(budget: .schedules(budget), faults: faults, shrinkBudget: 80))
        let failure = try #require(report.failure, "no schedule of \(budget) failed:\n\(report)")
        #expect(failure.check == check, "\(report)")
        #expect(failure.shrunk.failures.contains { $0.check == check })
        #expect(failure.shrunk.size.choices <= failure.original.size.choices)
        #expect(failure.shrunk.size.steps <= failure.original.size.steps)
        #expect(report.description.contains("Shrunk in"))
        // What a failing test keeps: the report as its issue, the shrunk run's history, replay file and page.
        withKnownIssue { #expect(report.expectPassed() == false) }
        #expect(failure.shrunk.page().contains(check))
        print(report)
        return failure
    }

    static func expectClean(_ flow: Flow, budget: Int) async throws {
        let report = try await Explorer.explore(flow, ExploreOptions(budget: .schedules(budget), faults: ExploreOptions.noFaults))
        #expect(report.passed, "\(report)")
    }

    @Test func anAppSavingItsOwnCopyOverTheServersLosesAnEdit() async throws {
        let failure = try await Self.expectFound(Flows.savesItsOwnCopy(), check: "durability", budget: 300)
        // The loss needs A's insert, openEditor and saveEditor and one edit of B's.
        #expect(failure?.shrunk.size.steps == 4)
        try await Self.expectClean(Flows.savesItsOwnCopy(fixed: true), budget: 40)
    }

    @Test func anAppWritingAfterItsPermissionWasLoweredLosesEdits() async throws {
        _ = try await Self.expectFound(Flows.writesAfterPermissionLowered(), check: "noSilentlyRevertedEdits", budget: 200)
        try await Self.expectClean(Flows.writesAfterPermissionLowered(fixed: true), budget: 40)
    }

    @Test func anAppAssigningASavedObjectAfterAnOrphanRepairIsRefused() async throws {
        _ = try await Self.expectFound(Flows.assignsAfterOrphanRepair(), check: "customSteps", budget: 200)
        try await Self.expectClean(Flows.assignsAfterOrphanRepair(fixed: true), budget: 40)
    }
}
