import Foundation
import MeowExplore
import MeowHistory
import MeowWire

/// `meowctl explore FLOW.json`: a flow file run under seeded schedules on a cluster meowctl
/// starts itself (docs/EXPLORING.md). Exit 0 when every schedule passed every check, 1 when one
/// failed (the report names the check, the shrunk schedule and how to replay it).
enum ExploreCommand {
    static let help = """
    meowctl explore FLOW.json [--seeds A..B | --seed N] [--schedules N | --seconds S]
                              [--replay SEED | --replay-choices FILE] [--faults kind=weight,…|none]
                              [--fault-rate R] [--sqlite] [--clusters N] [--shrink-budget N] [--steps-socket PATH]
                              [--json] [--history FILE]
        Runs the flow file (docs/EXPLORING.md) under seeded schedules on a cluster of its own
        (the store-service and sync-service beside meowctl, or in $MEOWCARE_BIN_DIR), judges
        each run with the checks, and shrinks the first failing schedule.

        --seeds A..B       run seeds A to B (default: from 1, --schedules of them)
        --seed N           start at seed N (one schedule unless --schedules or --seconds)
        --schedules N      how many schedules (default 100); --seconds S: until S seconds pass
        --replay SEED      seed SEED alone, shrunk again: the same shrunk schedule as before
        --replay-choices FILE   exactly the schedule in FILE (the .replay.json a failure
                           writes: seed, flow, choices), judged, not shrunk
        --faults LIST      fault weights, e.g. dropAfterCommit=2,holdAndDeliver=1; none: no
                           faults. Kinds: \(FaultKind.allCases.map(\.rawValue).joined(separator: ", "))
        --fault-rate R     the chance a scheduling point draws a fault (default 0.1)
        --sqlite           devices keep their stores in SQLite (needed by kill and crashPoint)
        --clusters N       run seeds on N clusters at once (default 1)
        --steps-socket PATH  where the flow's custom steps and invariants are served
        --json             the report as one JSON object
        --history FILE     the failing shrunk run's history (or the replayed run's, or the one
                           seed's that passed), one JSON object per line

        A failure writes FLOW.replay.json and FLOW.report.html (the shrunk run as a page)
        beside the flow file (when it can) and prints the commands that replay it. Exit 0: every schedule passed; 1: a check failed; 2: the
        cluster could not start; 64: usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments(arguments, flags: ["json", "sqlite"])
        try args.check(known: ["seeds", "seed", "schedules", "seconds", "replay", "replay-choices", "faults", "fault-rate", "sqlite",
                               "shrink-budget", "clusters", "steps-socket", "json", "history"], command: "explore")
        guard args.positional.count == 1, let flowPath = args.positional.first else {
            throw .usage("meowctl explore needs one FLOW.json, e.g. meowctl explore flow.json --schedules 50")
        }
        let plan = try ExplorePlan(args, flowPath: flowPath)
        var file: FlowFile
        do {
            file = try FlowFile.read(flowPath)
        } catch {
            throw .usage(error.message)
        }
        var replayFile: ReplayFile?
        if let path = args.value("replay-choices") {
            replayFile = try ReplayFile.read(path)
            if let flow = replayFile?.flow { file.flow = flow }
        }
        var flow = file.flow
        if let socket = args.value("steps-socket") {
            let remote = RemoteSteps(socketPath: socket)
            remote.bindSteps(of: &flow)
            remote.addInvariants(file.invariants, to: &flow)
        } else if !flow.unboundSteps.isEmpty || !file.invariants.isEmpty {
            let names = flow.unboundSteps.map { "step \"\($0)\"" } + file.invariants.map { "invariant \"\($0)\"" }
            throw .usage("The flow names the team's own \(names.joined(separator: ", ")); serve them and give --steps-socket PATH (docs/EXPLORING.md).")
        }
        var sessions: [ExploreSession] = []
        let failed: Bool
        do {
            let count = replayFile == nil ? max(1, plan.options.clusters) : 1
            for index in 0..<count {
                do {
                    sessions.append(try await ExploreSession.start(flow, plan.options, cluster: count > 1 ? index : nil))
                } catch let error as MeowCareError {
                    throw CommandError.unavailable("The explorer's cluster did not start: \(error.message)")
                }
            }
            if let replayFile {
                failed = try await replay(sessions[0], replayFile, args: args)
            } else {
                failed = try await explore(sessions, plan: plan, flowPath: flowPath, args: args)
            }
        } catch {
            for session in sessions { await session.stop() }
            if let error = error as? CommandError { throw error }
            throw .unavailable("The explorer stopped: \(error)")
        }
        for session in sessions { await session.stop() }
        if failed { throw .errorReply }
    }

    /// Explores and prints the report; true when a schedule failed.
    static func explore(_ sessions: [ExploreSession], plan: ExplorePlan, flowPath: String, args: Arguments) async throws -> Bool {
        let report = try await ExploreSession.explore(on: sessions)
        let session = sessions[0]
        var replay: ReplayInstructions?
        if let failure = report.failure {
            replay = ReplayInstructions(failure: failure, plan: plan, flowPath: flowPath, stepsSocket: args.value("steps-socket"))
            if let history = args.value("history") { try write(failure.shrunk.historyJSONLines + "\n", to: history) }
        } else if let history = args.value("history"), report.schedules == 1, let seed = report.seeds?.lowerBound {
            // One seed that passed (a replay, --seed N): its history, from the same seed run again.
            try write(try await session.run(seed: seed).historyJSONLines + "\n", to: history)
        }
        if args.has("json") {
            var json = report.json.objectValue ?? [:]
            json["schedulesPerSecond"] = .double(report.schedulesPerSecond)
            if let replay { json["replay"] = replay.json }
            print(MeowCtl.compactJSON(JSONValue.object(json)))
        } else {
            print(report.description)
            if let replay { print(replay.text) }
        }
        return !report.passed
    }

    /// Runs the file's choices once and prints the run; true when a check failed.
    static func replay(_ session: ExploreSession, _ file: ReplayFile, args: Arguments) async throws -> Bool {
        let run = try await session.run(choices: file.choices, seed: file.seed)
        if let history = args.value("history") { try write(run.historyJSONLines + "\n", to: history) }
        if args.has("json") {
            print(MeowCtl.compactJSON(run.json))
        } else {
            var lines = ["Replayed \"\(run.flow.name)\" (seed \(file.seed), \(run.choices.count) choices):"]
            lines += run.lines.map { "  " + $0 }
            if run.failures.isEmpty {
                lines.append("Every check passed.")
            } else {
                lines.append("FAILED: check \(run.failures.map { "\"\($0.check)\"" }.joined(separator: ", ")).")
                lines += run.failures.map { "  \($0)" }
            }
            print(lines.joined(separator: "\n"))
        }
        return !run.failures.isEmpty
    }

    static func write(_ text: String, to path: String) throws(CommandError) {
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw .usage("Cannot write \(path): \(error.localizedDescription)")
        }
    }
}

/// The command line's seeds, budget and faults as `ExploreOptions`, and the options a replay
/// must repeat to draw the same schedules.
struct ExplorePlan {
    var options = ExploreOptions()
    /// `--faults …`, `--fault-rate …`, `--sqlite` as given: a replay of a seed repeats them.
    var drawArguments: [String] = []

    init(_ args: Arguments, flowPath: String) throws(CommandError) {
        let exclusive = [["seeds", "seed", "replay", "replay-choices"], ["schedules", "seconds"]]
        for group in exclusive {
            let given = group.filter { args.value($0) != nil }
            if given.count > 1 { throw .usage("Give only one of \(given.map { "--\($0)" }.joined(separator: ", ")).") }
        }
        var schedules: Int?
        if let text = args.value("schedules") {
            guard let count = Int(text), count > 0 else { throw .usage("--schedules takes a positive count, e.g. --schedules 100; got \(text).") }
            schedules = count
        }
        if let text = args.value("seconds") {
            guard let seconds = Double(text), seconds > 0 else { throw .usage("--seconds takes a positive number, e.g. --seconds 30; got \(text).") }
            options.budget = .seconds(seconds)
        } else if let schedules {
            options.budget = .schedules(schedules)
        }
        if let text = args.value("seeds") {
            let parts = text.replacingOccurrences(of: "...", with: "..").components(separatedBy: "..")
            guard parts.count == 2, let first = UInt64(parts[0]), let last = UInt64(parts[1]), first <= last else {
                throw .usage("--seeds takes a range A..B, e.g. --seeds 1..500; got \(text).")
            }
            options.firstSeed = first
            if args.value("seconds") == nil && schedules == nil { options.budget = .schedules(Int(min(last - first, UInt64(Int.max - 1))) + 1) }
        }
        for name in ["seed", "replay"] {
            guard let text = args.value(name) else { continue }
            guard let seed = UInt64(text) else { throw .usage("--\(name) takes a seed (a whole number ≥ 0); got \(text).") }
            options.firstSeed = seed
            if name == "replay" || (args.value("seconds") == nil && schedules == nil) { options.budget = .schedules(1) }
        }
        if let text = args.value("faults") {
            options.faults = try Self.faults(text)
            drawArguments += ["--faults", text]
        }
        if let text = args.value("fault-rate") {
            guard let rate = Double(text), (0...1).contains(rate) else { throw .usage("--fault-rate takes a chance from 0 to 1; got \(text).") }
            options.faultRate = rate
            drawArguments += ["--fault-rate", text]
        }
        if args.has("sqlite") {
            options.persistence = .sqlite
            drawArguments.append("--sqlite")
        }
        if let text = args.value("clusters") {
            guard let count = Int(text), (1...16).contains(count) else { throw .usage("--clusters takes a count from 1 to 16; got \(text).") }
            options.clusters = count
        }
        if let text = args.value("shrink-budget") {
            guard let runs = Int(text), runs >= 0 else { throw .usage("--shrink-budget takes a count of runs; got \(text).") }
            options.shrinkBudget = runs
            drawArguments += ["--shrink-budget", text]
        }
    }

    /// `kind=weight,…` (a kind alone weighs 1), or `none`.
    static func faults(_ text: String) throws(CommandError) -> [FaultKind: Double] {
        if text == "none" { return ExploreOptions.noFaults }
        var faults: [FaultKind: Double] = [:]
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: .whitespaces) }
            guard let kind = FaultKind(rawValue: parts[0]) else {
                throw .usage("--faults: no fault kind \"\(parts[0])\". Kinds: \(FaultKind.allCases.map(\.rawValue).joined(separator: ", ")), or none.")
            }
            guard let weight = parts.count == 2 ? Double(parts[1]) : 1, weight >= 0 else {
                throw .usage("--faults: \(parts[0])'s weight must be a number ≥ 0; got \(parts[1]).")
            }
            faults[kind] = weight
        }
        return faults
    }
}
