#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire

/// A long request's `progress` events on stderr while it runs (share create, snapshots, schema):
/// redrawn in place on a terminal, one line per event otherwise (`--progress` into a file or
/// pipe), never with `--json`.
extension ServiceSession {
    /// Calls `op` showing its progress when `show`; the session is closed afterwards (its events
    /// stream is read to its end, so every event that came before the reply is shown).
    func callShowingProgress(_ op: String, _ params: [String: JSONValue], show: Bool) async throws(CommandError) -> JSONValue {
        guard show else { return try await call(op, params) }
        _ = try await call("subscribe", ["topics": ["progress"]])
        let inPlace = isatty(2) != 0
        let printer = Task.detached { [client] in
            var shown = false
            for await event in client.events where event.name == "progress" {
                let data = event.data
                var line = "\(data["op"].cell): \(data["phase"].cell) \(data["done"].cell)"
                if let total = data["total"]?.intValue { line += "/\(total)" }
                ProgressLine.write(inPlace ? "\r\u{1B}[2K\(line)" : "\(line)\n")
                shown = true
            }
            if inPlace && shown { ProgressLine.write("\n") }
        }
        let result: JSONValue
        do {
            result = try await call(op, params)
        } catch {
            close()
            await printer.value
            throw error
        }
        close()
        await printer.value
        return result
    }
}

extension Arguments {
    /// `--progress` shows progress also when stderr is not a terminal; `--no-progress` and `--json` never.
    var showsProgress: Bool {
        !output.json && !has("no-progress") && (has("progress") || isatty(2) != 0)
    }
}
