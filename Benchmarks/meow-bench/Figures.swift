import MeowWire
import Synchronization

/// Every figure the suites of a run measured, by key, for `meow-bench --json`: a script holds
/// them to their targets without reading the tables. Each suite reports a figure here where it
/// prints it.
final class Figures: Sendable {
    struct Figure: Sendable {
        var value: Double
        /// The same-run baseline the value is compared with (nil: the figure has none).
        var baseline: Double?
        var unit: String
    }

    static let run = Figures()

    private let figures = Mutex<[String: Figure]>([:])

    /// A figure beside its baseline. Its ratio is value ÷ baseline: for a throughput
    /// (records/s) the service's share of the baseline's speed, for a time (ms, µs) how many
    /// times the baseline's time it took.
    func add(_ key: String, _ value: Double, baseline: Double?, unit: String) {
        figures.withLock { $0[key] = Figure(value: value, baseline: baseline, unit: unit) }
    }

    /// `{"figures": {KEY: {"value", "baseline", "ratio", "unit"}}}`, keys sorted; `baseline` and
    /// `ratio` are null for a figure without a baseline.
    func json() -> String {
        let all = figures.withLock { $0 }
        var object: [String: JSONValue] = [:]
        // JSON has no infinity or NaN (a run too short to time): such a number is null.
        func number(_ value: Double?) -> JSONValue { value.flatMap { $0.isFinite ? .double($0) : nil } ?? .null }
        for (key, figure) in all {
            let ratio = figure.baseline.flatMap { $0 > 0 ? figure.value / $0 : nil }
            object[key] = ["value": number(figure.value), "baseline": number(figure.baseline), "ratio": number(ratio), "unit": .string(figure.unit)]
        }
        let document: JSONValue = ["figures": .object(object)]
        return (try? JSONTextEncoder(options: .sortedKeys).text(document)) ?? #"{"figures":{}}"#
    }
}
