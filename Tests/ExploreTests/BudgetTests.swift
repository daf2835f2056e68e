import Foundation
import MeowExplore
import Testing

/// A run's budget in schedules or in seconds (issue #42, requirement 7), from Swift; the same
/// two from the command line are in `MeowCtlExploreTests`, from Python in test_explore.py.
@Suite("explore budget", .timeLimit(.minutes(5)))
struct BudgetTests {
    static func flow() -> Flow {
        Flow(name: "budget", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .update("s1", fields: ["title"])]),
            FlowActor(device: "B", user: "olivia", steps: [.update("s1", fields: ["title"])]),
        ])
    }

    @Test("a budget in seconds runs seeds from the first until the time is up, and at least one")
    func secondsBudget() async throws {
        let none = try await Explorer.explore(Self.flow(), ExploreOptions(firstSeed: 7, budget: .seconds(0), faults: ExploreOptions.noFaults))
        #expect(none.passed, "\(none)")
        #expect(none.schedules == 1 && none.seeds == 7...7, "\(none)")
        let some = try await Explorer.explore(Self.flow(), ExploreOptions(firstSeed: 7, budget: .seconds(0.5), faults: ExploreOptions.noFaults))
        #expect(some.passed, "\(some)")
        #expect(some.schedules >= 1 && some.seeds == 7...(7 + UInt64(some.schedules) - 1), "\(some)")
    }

    @Test("a budget in schedules runs exactly that many seeds")
    func schedulesBudget() async throws {
        let report = try await Explorer.explore(Self.flow(), ExploreOptions(firstSeed: 3, budget: .schedules(4), faults: ExploreOptions.noFaults))
        #expect(report.passed, "\(report)")
        #expect(report.schedules == 4 && report.seeds == 3...6)
    }

    @Test("an options file gives the budget as schedules or seconds, and refuses anything else")
    func budgetInJSON() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(ExploreOptions.self, from: Data(#"{"budget": {"seconds": 2.5}}"#.utf8)).budget == .seconds(2.5))
        #expect(try decoder.decode(ExploreOptions.self, from: Data(#"{"budget": {"schedules": 7}}"#.utf8)).budget == .schedules(7))
        #expect(try decoder.decode(ExploreOptions.self, from: Data("{}".utf8)).budget == .schedules(100))
        #expect(throws: DecodingError.self) { try decoder.decode(ExploreOptions.self, from: Data(#"{"budget": {"minutes": 1}}"#.utf8)) }
        let encoded = try JSONEncoder().encode(ExploreOptions(budget: .seconds(30)))
        #expect(try decoder.decode(ExploreOptions.self, from: encoded).budget == .seconds(30))
    }
}
