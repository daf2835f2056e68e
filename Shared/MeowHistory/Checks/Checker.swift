/// Judges a run with the built-in checks and a team's invariants, and answers every failure.
public struct Checker: Sendable {
    /// The built-in checks, in the order their failures are reported: an unresolved outcome
    /// first, since it leaves the others judging a history that is not settled.
    public static let standard: [any HistoryCheck] = [
        ResolutionCheck(), DurabilityCheck(), PermissionSafetyCheck(), ConflictsCheck(),
        DuplicatesCheck(), HistoryTokensCheck(), ConvergenceCheck(), DoctorCheck(),
    ]

    public var checks: [any HistoryCheck]

    public init(checks: [any HistoryCheck] = Checker.standard, invariants: [Invariant] = []) {
        self.checks = checks + invariants
    }

    public func check(_ run: RunRecord) -> [CheckFailure] {
        // The checks that compare with the reference model share one replay of it.
        var judgement: Judgement?
        return checks.flatMap { check -> [CheckFailure] in
            guard let modelCheck = check as? any ModelCheck else { return check.check(run) }
            let shared = judgement ?? Judgement(run)
            judgement = shared
            return modelCheck.check(shared)
        }
    }
}
