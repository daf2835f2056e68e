import Foundation
import MeowExplore
import MeowWire

/// A schedule to run again exactly: the seed (it names the run's objects), the flow as shrunk
/// and the choices. A failure writes one; `--replay-choices FILE` reads it.
struct ReplayFile: Codable {
    var seed: UInt64
    /// The flow as the shrunk schedule ran it (steps the shrinker dropped are gone); absent:
    /// the flow file's.
    var flow: Flow?
    var choices: [Choice]
    /// The check the schedule failed, for the reader.
    var check: String?

    static func read(_ path: String) throws(CommandError) -> ReplayFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw .usage("Cannot read --replay-choices \(path).") }
        do {
            return try JSONDecoder().decode(ReplayFile.self, from: data)
        } catch {
            throw .usage("--replay-choices \(path) is not a replay file ({\"seed\": N, \"choices\": [\"step A\", …], \"flow\": {…}}): \(error)")
        }
    }
}

/// How to replay a failure: the seed again (drawn and shrunk the same way), or the shrunk
/// schedule itself from the file written beside the flow.
struct ReplayInstructions {
    var seedCommand: String
    var choicesCommand: String?
    var file: String?

    init(failure: ExploreFailure, plan: ExplorePlan, flowPath: String, stepsSocket: String?) {
        let socket = stepsSocket.map { ["--steps-socket", $0] } ?? []
        seedCommand = Self.command(["meowctl", "explore", flowPath, "--replay", String(failure.seed)] + plan.drawArguments + socket)
        let path = (flowPath.hasSuffix(".json") ? String(flowPath.dropLast(5)) : flowPath) + ".replay.json"
        let replay = ReplayFile(seed: failure.seed, flow: failure.shrunk.flow, choices: failure.shrunk.choices, check: failure.check)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        if let data = try? encoder.encode(replay), FileManager.default.createFile(atPath: path, contents: data) {
            file = path
            choicesCommand = Self.command(["meowctl", "explore", flowPath, "--replay-choices", path] + (plan.options.persistence == .sqlite ? ["--sqlite"] : []) + socket)
        }
    }

    var text: String {
        var lines = ["Replay the seed (drawn and shrunk again): \(seedCommand)"]
        if let choicesCommand { lines.append("Replay the shrunk schedule (\(file ?? "")): \(choicesCommand)") }
        return lines.joined(separator: "\n")
    }

    var json: JSONValue {
        var object: [String: JSONValue] = ["command": .string(seedCommand)]
        if let choicesCommand { object["choicesCommand"] = .string(choicesCommand) }
        if let file { object["file"] = .string(file) }
        return .object(object)
    }

    /// Words joined for a shell, each quoted when it needs to be.
    static func command(_ words: [String]) -> String {
        words.map { word in
            word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=,:@".contains($0) } && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }
}
