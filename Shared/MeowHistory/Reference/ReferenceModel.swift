import MeowWire

/// The documented rules of mirroring and sharing (docs/RULES.md, "Saving, conflicts and merge
/// policies", "Shares and participants", "Mirroring between them"), restated from the docs alone
/// and replayed over a history: what the cloud must end with, record by record and field by
/// field, and what became of every write. It shares no code with the services on purpose: a
/// misreading of the rules in the services must not be copied into the judge.
public struct ReferenceModel: Sendable {
    public var deletePolicies: [String: DeletePolicy]

    public init(deletePolicies: [String: DeletePolicy] = [:]) {
        self.deletePolicies = deletePolicies
    }

    /// The model for a run: its recorded per-entity policies (an unknown name reads as the
    /// default, deleteWins, and is noted in the assumptions).
    public init(_ run: RunRecord) {
        self.init(deletePolicies: run.deletePolicies.compactMapValues(DeletePolicy.init(rawValue:)))
    }

    public func replay(_ history: [HistoryEntry]) -> ExpectedState {
        var replay = Replay(policies: deletePolicies)
        for entry in history.sorted(by: { $0.index < $1.index }) { replay.apply(entry) }
        return replay.finish()
    }

    public func replay(_ run: RunRecord) -> ExpectedState {
        var state = replay(run.history)
        for (entity, name) in run.deletePolicies where DeletePolicy(rawValue: name) == nil {
            state.assumptions.append("\(entity)'s delete policy \"\(name)\" is none of deleteWins, resurrect; it was read as deleteWins.")
        }
        return state
    }
}
