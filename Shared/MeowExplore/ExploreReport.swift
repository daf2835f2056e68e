import MeowHistory
import MeowWire

/// How big a schedule is: what the shrinker makes smaller.
public struct ScheduleSize: Sendable, Codable, Equatable, CustomStringConvertible {
    public var actors: Int
    public var steps: Int
    public var objects: Int
    public var faults: Int
    public var choices: Int

    public var description: String { "\(actors) actors, \(steps) steps, \(objects) objects, \(faults) faults, \(choices) choices" }
}

/// One schedule run: the choices it made, what it recorded, and what the checks found.
public struct ScheduleRun: Sendable {
    /// The flow as run (the shrinker's candidates run smaller flows).
    public var flow: Flow
    public var choices: [Choice]
    public var record: RunRecord
    public var failures: [CheckFailure]

    public var size: ScheduleSize {
        var objects: Set<String> = []
        for actor in flow.actors { for step in actor.steps { objects.formUnion(step.objects) } }
        return ScheduleSize(actors: flow.actors.count, steps: flow.stepCount, objects: objects.count,
                            faults: choices.filter(\.isFault).count, choices: choices.count)
    }

    /// The schedule step by step, one numbered line per choice, a step's line naming what it did
    /// and how it ended: `4. step B — update s1 [title] → ok`.
    public var lines: [String] {
        var cursor: [String: Int] = [:]
        var lines: [String] = []
        var entryForStep: [Int: HistoryEntry] = [:]
        for entry in record.history { if let step = entry.step, entryForStep[step] == nil { entryForStep[step] = entry } }
        let stepIndexes = flow.globalStepIndexes
        for (number, choice) in choices.enumerated() {
            var line = "\(number + 1). \(choice)"
            if case let .step(actor) = choice, let actorIndex = flow.actors.firstIndex(where: { $0.device == actor }) {
                let position = cursor[actor, default: 0]
                cursor[actor] = position + 1
                if position < flow.actors[actorIndex].steps.count {
                    let global = stepIndexes[actorIndex] + position
                    line += " — \(flow.actors[actorIndex].steps[position])"
                    if let entry = entryForStep[global] { line += " → \(entry.outcome.summary)" }
                }
            }
            lines.append(line)
        }
        return lines
    }

    /// The history as JSON lines, one entry per line.
    public var historyJSONLines: String { record.history.jsonLines }
}

/// A failing schedule, found and shrunk.
public struct ExploreFailure: Sendable {
    /// The seed whose schedule failed first.
    public var seed: UInt64
    /// The check that failed (the one the shrinker kept failing).
    public var check: String
    /// The schedule as the seed drew it.
    public var original: ScheduleRun
    /// The smallest schedule found that fails the same check.
    public var shrunk: ScheduleRun
    /// Runs the shrinker spent.
    public var shrinkRuns: Int
}

/// What `Explorer.explore` found.
public struct ExploreReport: Sendable, CustomStringConvertible {
    public var flow: String
    public var schedules: Int
    public var seeds: ClosedRange<UInt64>?
    public var seconds: Double
    public var failure: ExploreFailure?

    public var passed: Bool { failure == nil }
    public var schedulesPerSecond: Double { seconds > 0 ? Double(schedules) / seconds : 0 }

    public var description: String {
        let seedText = seeds.map { $0.lowerBound == $0.upperBound ? "seed \($0.lowerBound)" : "seeds \($0.lowerBound)…\($0.upperBound)" } ?? "no seeds"
        var lines = ["Explored \"\(flow)\": \(schedules) schedules (\(seedText)) in \(String(format: "%.2f", seconds)) s "
                     + "(\(String(format: "%.1f", schedulesPerSecond))/s)."]
        guard let failure else {
            lines.append("Every schedule passed every check.")
            return lines.joined(separator: "\n")
        }
        lines.append("FAILED: seed \(failure.seed), check \"\(failure.check)\".")
        for item in failure.shrunk.failures where item.check == failure.check { lines.append("  \(item)") }
        lines.append("Shrunk in \(failure.shrinkRuns) runs from \(failure.original.size) to \(failure.shrunk.size).")
        lines.append("Actors: " + failure.shrunk.flow.actors.map { "\($0.device) (\($0.user)): \($0.steps.map(\.description).joined(separator: "; "))" }
            .joined(separator: " | "))
        lines.append("Schedule (replay with these choices):")
        lines.append(contentsOf: failure.shrunk.lines.map { "  " + $0 })
        lines.append("Choices: \(failure.shrunk.choices.map(\.description).joined(separator: ", "))")
        return lines.joined(separator: "\n")
    }
}

extension ScheduleRun {
    /// The run as JSON: its flow, choices, numbered lines, failures, size and history.
    public var json: JSONValue {
        [
            "flow": (try? JSONValue(encoding: flow)) ?? .null,
            "choices": .array(choices.map { .string($0.description) }),
            "lines": .array(lines.map { .string($0) }),
            "failures": (try? JSONValue(encoding: failures)) ?? .array([]),
            "size": (try? JSONValue(encoding: size)) ?? .null,
            "seed": .string(String(record.seed)),
            "history": (try? JSONValue(encoding: record.history)) ?? .array([]),
        ]
    }
}

extension ExploreReport {
    /// The report as JSON, for tools (`meowctl explore --json`): the same facts as the text.
    public var json: JSONValue {
        var out: [String: JSONValue] = [
            "flow": .string(flow), "schedules": .int(schedules), "seconds": .double(seconds), "passed": .bool(passed),
            "firstSeed": seeds.map { .string(String($0.lowerBound)) } ?? .null, "lastSeed": seeds.map { .string(String($0.upperBound)) } ?? .null,
        ]
        if let failure {
            out["failure"] = [
                "seed": .string(String(failure.seed)), "check": .string(failure.check), "shrinkRuns": .int(failure.shrinkRuns),
                "original": (try? JSONValue(encoding: failure.original.size)) ?? .null, "shrunk": failure.shrunk.json,
            ]
        }
        return .object(out)
    }
}

extension Outcome {
    /// A few words for a report line.
    var summary: String {
        switch self {
        case .ok: "ok"
        case let .fail(code, _): "failed \(code)"
        case let .unknown(reason): "unknown (\(reason))"
        case let .resolved(committed, _): committed ? "resolved: committed" : "resolved: not committed"
        }
    }
}

extension Array where Element == HistoryEntry {
    /// One JSON object per line, keys sorted.
    public var jsonLines: String {
        map { entry in (try? JSONValue(encoding: entry)).map(JSONWriter.text) ?? "{}" }.joined(separator: "\n")
    }
}

extension Flow {
    /// The index of each actor's first step in the flow's global step numbering (actor by actor).
    var globalStepIndexes: [Int] {
        var start = 0
        return actors.map { actor in
            defer { start += actor.steps.count }
            return start
        }
    }
}
