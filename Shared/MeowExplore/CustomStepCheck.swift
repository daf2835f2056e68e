import MeowHistory

/// A team's own step is app code: when it throws, the app met an error it did not handle — an
/// uncaught exception or a crash on a real device (Core Data's `invalidReassignment` is an
/// `NSInvalidArgumentException`). A step that must tolerate an error catches it and answers
/// what happened instead.
public struct CustomStepCheck: HistoryCheck {
    public let name = "customSteps"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] {
        run.history.compactMap { entry in
            guard entry.op.hasPrefix(HistoryOp.customPrefix), case let .fail(code, message) = entry.outcome, code != "stepNotReady" else { return nil }
            let name = entry.op.dropFirst(HistoryOp.customPrefix.count)
            return CheckFailure(check: self.name, explanation: "\(entry.actor)'s own step \(name) (#\(entry.index)) threw \(code): \(message)",
                                entries: [entry.index])
        }
    }
}
