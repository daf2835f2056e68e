import MeowExplore
import Testing

/// Requirement 4: a seed, and a printed choice list, give the same schedule and the same
/// history; runs on one reused cluster do not leak into each other.
@Suite(.serialized) struct DeterminismTests {
    @Test func aSeedRunTwiceGivesTheSameHistory() async throws {
        try await withSession(Flows.correct()) { session in
        let first = try await session.run(seed: 42)
        _ = try await session.run(seed: 43)
        let second = try await session.run(seed: 42)
        #expect(first.choices == second.choices)
        expectSameHistory(first.record.history, second.record.history)
        // Each send that made requests names them: the log is read lazily, and must still say whose they were.
        let sends = first.record.history.filter { $0.op == HistoryOp.send && ($0.outcome.result?["requests"]?.intValue ?? 0) > 0 }
        #expect(!sends.isEmpty && sends.allSatisfy { !$0.cloudRequests.isEmpty })
        #expect(first.record.final.devices.map(\.objects) == second.record.final.devices.map(\.objects))
        }
    }

    @Test func aPrintedChoiceListReplaysTheSameHistory() async throws {
        try await withSession(Flows.correct()) { session in
        let drawn = try await session.run(seed: 7)
        let text = drawn.choices.map(\.description)
        let replayed = try await session.run(choices: text.compactMap(Choice.init), seed: 7)
        #expect(replayed.choices == drawn.choices)
        expectSameHistory(replayed.record.history, drawn.record.history)
        }
    }

    @Test func twoSeedsDrawTwoSchedules() async throws {
        try await withSession(Flows.correct()) { session in
        let a = try await session.run(seed: 1), b = try await session.run(seed: 2)
        #expect(a.choices != b.choices)
        }
    }
}

/// Runs `body` on a session for `flow`, stopping its cluster however `body` ends.
func withSession(_ flow: Flow, _ options: ExploreOptions = ExploreOptions(), _ body: (ExploreSession) async throws -> Void) async throws {
    let session = try await ExploreSession.start(flow, options)
    do {
        try await body(session)
    } catch {
        await session.stop()
        throw error
    }
    await session.stop()
}

/// Two histories are the same but for the cloud's request-log numbers, which count every
/// request the cloud ever served: compared from each run's first one, they must match too.
func expectSameHistory(_ a: [HistoryEntry], _ b: [HistoryEntry], sourceLocation: SourceLocation = #_sourceLocation) {
    func normalized(_ history: [HistoryEntry]) -> [HistoryEntry] {
        let first = history.flatMap(\.cloudRequests).min() ?? 0
        return history.map { entry in
            var entry = entry
            entry.cloudRequests = entry.cloudRequests.map { $0 - first }
            return entry
        }
    }
    let (x, y) = (normalized(a), normalized(b))
    #expect(x.count == y.count, sourceLocation: sourceLocation)
    if let index = x.indices.first(where: { $0 < y.count && x[$0] != y[$0] }) {
        Issue.record("The histories part at #\(index):\n\(x[index])\n\(y[index])", sourceLocation: sourceLocation)
    }
}
