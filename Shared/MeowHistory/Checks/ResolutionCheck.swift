/// No outcome is left unknown: a request whose answer no client saw (a timeout, a killed
/// device) must be settled from the cloud's own request log before the run is judged, since the
/// other checks cannot tell a lost write from one that never happened.
public struct ResolutionCheck: HistoryCheck {
    public let name = "resolution"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] {
        run.history.compactMap { entry in
            guard case let .unknown(reason) = entry.outcome else { return nil }
            let log = entry.cloudRequests.isEmpty ? "it names no cloud request"
                : "its cloud requests are log #\(entry.cloudRequests.map(String.init).joined(separator: ", #"))"
            return CheckFailure(check: name, explanation:
                "\(entry.described) has no outcome (unknown: \(reason)); the runner must resolve it from the cloud's request log, and \(log).",
                entries: [entry.index])
        }
    }
}
