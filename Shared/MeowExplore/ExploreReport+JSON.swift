import MeowHistory
import MeowWire

extension ExploreReport {
    /// The report as one JSON object (`meowctl explore --json`): `flow`, `schedules`, `seeds`
    /// (`{first, last}`), `seconds`, `schedulesPerSecond`, `passed`, and on a failure `failure`:
    /// `seed`, `check`, `failures` (`{check, explanation, entries}` of the shrunk run),
    /// `shrinkRuns`, `originalSize`, `shrunk` (`ScheduleRun.json`).
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "flow": .string(flow), "schedules": .int(schedules), "seconds": .double(seconds),
            "schedulesPerSecond": .double(schedulesPerSecond), "passed": .bool(passed),
            "seeds": seeds.map { ["first": .int(Int(truncatingIfNeeded: $0.lowerBound)), "last": .int(Int(truncatingIfNeeded: $0.upperBound))] } ?? .null,
        ]
        if let failure {
            object["failure"] = [
                "seed": .int(Int(truncatingIfNeeded: failure.seed)), "check": .string(failure.check),
                "failures": (try? JSONValue(encoding: failure.shrunk.failures.filter { $0.check == failure.check })) ?? .array([]),
                "shrinkRuns": .int(failure.shrinkRuns),
                "originalSize": (try? JSONValue(encoding: failure.original.size)) ?? .null,
                "shrunk": failure.shrunk.json(seed: failure.seed),
            ]
        }
        return .object(object)
    }
}

extension ScheduleRun {
    /// The run as JSON: `seed`, `size`, `choices` (their text form), `lines` (the schedule step
    /// by step), `failures`, `passed`, `actors` (each actor's steps as text).
    public func json(seed: UInt64) -> JSONValue {
        [
            "seed": .int(Int(truncatingIfNeeded: seed)),
            "size": (try? JSONValue(encoding: size)) ?? .null,
            "choices": .array(choices.map { .string($0.description) }),
            "lines": .array(lines.map { .string($0) }),
            "failures": (try? JSONValue(encoding: failures)) ?? .array([]),
            "passed": .bool(failures.isEmpty),
            "actors": .array(flow.actors.map { ["device": .string($0.device), "user": .string($0.user), "steps": .array($0.steps.map { .string($0.description) })] }),
        ]
    }
}
