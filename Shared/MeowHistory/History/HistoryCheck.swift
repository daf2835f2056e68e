/// A property a run must have. The built-in checks and a team's own invariants are all this.
public protocol HistoryCheck: Sendable {
    /// A stable name: the shrinker keeps a smaller schedule only when the check of the same
    /// name still fails.
    var name: String { get }
    func check(_ run: RunRecord) -> [CheckFailure]
}

/// One way a run broke a check, in words a person can act on, naming the requests involved.
public struct CheckFailure: Codable, Sendable, Equatable, CustomStringConvertible {
    public var check: String
    public var explanation: String
    /// Indexes of the history entries the explanation names.
    public var entries: [Int]

    public init(check: String, explanation: String, entries: [Int] = []) {
        self.check = check
        self.explanation = explanation
        self.entries = entries
    }

    public var description: String {
        entries.isEmpty ? "\(check): \(explanation)"
            : "\(check): \(explanation) (history #\(entries.map(String.init).joined(separator: ", #")))"
    }
}

/// A team's invariant as a function over the final state and the history.
public struct Invariant: HistoryCheck {
    public let name: String
    private let body: @Sendable (RunRecord) -> [String]

    /// `body` answers the violations it finds, one sentence each; none when the run is fine.
    public init(_ name: String, _ body: @escaping @Sendable (RunRecord) -> [String]) {
        self.name = name
        self.body = body
    }

    public func check(_ run: RunRecord) -> [CheckFailure] {
        body(run).map { CheckFailure(check: name, explanation: $0) }
    }
}
