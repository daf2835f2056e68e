import Foundation
import MeowExplore
import MeowWire

/// How to replay a failure: the seed again (drawn and shrunk the same way), or the shrunk
/// schedule itself from the file written beside the flow.
struct ReplayInstructions {
    var seedCommand: String
    var choicesCommand: String?
    var file: String?
    /// The shrunk run as a page, written beside the flow file.
    var page: String?

    init(failure: ExploreFailure, plan: ExplorePlan, flowPath: String, stepsSocket: String?) {
        let socket = stepsSocket.map { ["--steps-socket", $0] } ?? []
        seedCommand = Self.command(["meowctl", "explore", flowPath, "--replay", String(failure.seed)] + plan.drawArguments + socket)
        let path = (flowPath.hasSuffix(".json") ? String(flowPath.dropLast(5)) : flowPath) + ".replay.json"
        if let text = try? ReplayFile(failure).text(), FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) {
            file = path
            choicesCommand = Self.command(["meowctl", "explore", flowPath, "--replay-choices", path] + (plan.options.persistence == .sqlite ? ["--sqlite"] : []) + socket)
        }
        let pagePath = (flowPath.hasSuffix(".json") ? String(flowPath.dropLast(5)) : flowPath) + ".report.html"
        if FileManager.default.createFile(atPath: pagePath, contents: Data(failure.shrunk.page().utf8)) { page = pagePath }
    }

    var text: String {
        var lines = ["Replay the seed (drawn and shrunk again): \(seedCommand)"]
        if let choicesCommand { lines.append("Replay the shrunk schedule (\(file ?? "")): \(choicesCommand)") }
        if let page { lines.append("The shrunk run as a page: \(page)") }
        return lines.joined(separator: "\n")
    }

    var json: JSONValue {
        var object: [String: JSONValue] = ["command": .string(seedCommand)]
        if let choicesCommand { object["choicesCommand"] = .string(choicesCommand) }
        if let file { object["file"] = .string(file) }
        if let page { object["page"] = .string(page) }
        return .object(object)
    }

    /// Words joined for a shell, each quoted when it needs to be.
    static func command(_ words: [String]) -> String {
        words.map { word in
            word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=,:@".contains($0) } && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }
}

extension ReplayFile {
    static func read(_ path: String) throws(CommandError) -> ReplayFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw .usage("Cannot read --replay-choices \(path).") }
        do {
            return try JSONValueDecoder().decode(ReplayFile.self, from: [UInt8](data))
        } catch {
            throw .usage("--replay-choices \(path) is not a replay file ({\"seed\": N, \"choices\": [\"step A\", …], \"flow\": {…}}): \(error)")
        }
    }
}
