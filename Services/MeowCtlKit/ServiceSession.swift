#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowInspection
import MeowWire
import StoreWire

/// One connection of a command for people: calls whose failures become meowctl's exit codes
/// (an error reply → 1, a lost or unreachable service → 2), reported for people on stderr or,
/// with `--json`, as `{"ok": false, "error": …}` on stdout.
///
/// ```swift
/// let device = try await ServiceSession.open(socket: path, output: output)
/// let stores = try await device.call("store.list")
/// ```
struct ServiceSession {
    let client: WireClient
    let hello: HelloResult
    let output: Output

    static func open(socket: String, credential: String? = nil, output: Output,
                     timeout: Duration = .seconds(30)) async throws(CommandError) -> ServiceSession {
        let (client, hello) = try await MeowCtl.connect(socket: socket, credential: credential, timeout: timeout)
        return ServiceSession(client: client, hello: hello, output: output)
    }

    func close() { client.close() }

    /// This connection for the checks `doctor` and `diff` share with MeowCareTesting.
    var inspection: WireInspectionConnection { WireInspectionConnection(client: client, user: hello.user) }

    /// Calls `op`; an error reply is reported and ends the command with exit code 1.
    func call(_ op: String, _ params: [String: JSONValue] = [:], timeout: Duration? = nil) async throws(CommandError) -> JSONValue {
        do {
            return try await client.call(op, params, timeout: timeout)
        } catch {
            throw output.fail(op: op, error)
        }
    }

    /// A store result read as its type; a reply that does not read is reported as the op's error.
    func read<R: Decodable>(_ type: R.Type, from reply: JSONValue, op: String) throws(CommandError) -> R {
        do throws(WireError) { return try StoreReply.read(R.self, from: reply, op: op) } catch { throw output.fail(op: op, error) }
    }

    /// Calls `op`, handing an error reply back instead of ending the command.
    func attempt(_ op: String, _ params: [String: JSONValue] = [:], timeout: Duration? = nil) async throws(CommandError) -> Result<JSONValue, WireError> {
        do {
            return .success(try await client.call(op, params, timeout: timeout))
        } catch {
            if Self.isUnreachable(error) { throw .unavailable("\(op): \(error.message)") }
            return .failure(error)
        }
    }

    /// `attempt` for a store result `R`: a reply that does not read is handed back as the op's error, naming the field.
    func attempt<R: Decodable>(_ op: String, _ params: [String: JSONValue] = [:], as type: R.Type) async throws(CommandError) -> Result<R, WireError> {
        switch try await attempt(op, params) {
        case let .success(reply):
            do throws(WireError) { return .success(try StoreReply.read(R.self, from: reply, op: op)) } catch { return .failure(error) }
        case let .failure(error):
            return .failure(error)
        }
    }

    /// Every row of a fetch, paged (`resultFormat: rows`), as dictionaries keyed by column.
    func rows(entity: String, predicate: String? = nil, arguments: [JSONValue] = [], stores: [String]? = nil,
              sort: [JSONValue]? = nil, limit: Int? = nil) async throws(CommandError) -> [[String: JSONValue]] {
        let page = 2000
        var result: [[String: JSONValue]] = []
        while true {
            var params: [String: JSONValue] = ["entity": .string(entity), "resultFormat": "rows",
                                               "offset": .int(result.count), "limit": .int(min(page, limit.map { $0 - result.count } ?? page))]
            if let predicate { params["predicate"] = .string(predicate); params["arguments"] = .array(arguments) }
            if let stores { params["stores"] = .array(stores.map { .string($0) }) }
            if let sort { params["sortDescriptors"] = .array(sort) }
            let reply = try read(FetchedRows<[[JSONValue]]>.self, from: try await call("fetch", params), op: "fetch")
            for row in reply.rows { result.append(Dictionary(uniqueKeysWithValues: zip(reply.columns, row))) }
            if reply.rows.count < page || (limit.map { result.count >= $0 } ?? false) { return result }
        }
    }

    static func isUnreachable(_ error: WireError) -> Bool {
        [.connectionClosed, .timedOut, .networkUnavailable].contains(error.code)
    }
}

/// How a command prints: tables and sentences for people, or one JSON document for scripts.
struct Output {
    let json: Bool

    /// Prints `value` as the command's JSON result.
    func emit(_ value: JSONValue) {
        print(MeowCtl.prettyJSON(value))
        fflush(nil)
    }

    /// A line for people (nothing in --json mode).
    func say(_ text: String) {
        guard !json else { return }
        print(text)
        fflush(nil)
    }

    /// Reports a failed call and returns the exit it maps to.
    func fail(op: String, _ error: WireError) -> CommandError {
        if ServiceSession.isUnreachable(error) { return .unavailable("\(op): \(error.message)") }
        if json {
            emit(["ok": false, "op": .string(op), "error": (try? JSONValue(encoding: error)) ?? .null])
        } else {
            var text = "meowctl: \(op) failed: \(error.code): \(error.message)"
            if let reason = error.details["reason"]?.stringValue { text += "\n  reason: \(reason)" }
            MeowCtl.printError(text)
        }
        return .errorReply
    }

    /// Reports a check that failed for a reason of meowctl's own (exit 1).
    func failure(_ message: String, code: String) -> CommandError {
        if json {
            emit(["ok": false, "error": ["code": .string(code), "message": .string(message)]])
        } else {
            MeowCtl.printError("meowctl: \(message)")
        }
        return .errorReply
    }
}

/// A plain-text table: a header row, then rows, columns padded to their widest cell.
///
/// ```swift
/// print(Table(["STORE", "PENDING"], [["Private", "2"]]).rendered)
/// ```
struct Table {
    var headers: [String]
    var rows: [[String]]

    init(_ headers: [String], _ rows: [[String]]) {
        self.headers = headers
        self.rows = rows
    }

    var rendered: String {
        guard !rows.isEmpty else { return "(none)" }
        var widths = headers.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}

/// What the commands for people parse the same way.
extension Arguments {
    /// Parses a command's arguments, rejecting unknown options; `--json` is always known.
    static func parse(_ arguments: [String], command: String, options: Set<String>,
                      flags: Set<String> = []) throws(CommandError) -> Arguments {
        let args = try Arguments(arguments, flags: flags.union(["json"]))
        try args.check(known: options.union(flags).union(["json"]).union(deploymentOptions), command: command)
        return args
    }

    var output: Output { Output(json: has("json")) }

    func integer(_ name: String, default fallback: Int? = nil) throws(CommandError) -> Int? {
        guard let text = value(name) else { return fallback }
        guard let number = Int(text), number >= 0 else { throw .usage("--\(name) needs a whole number ≥ 0, got '\(text)'.") }
        return number
    }

    func timeout(default seconds: Double) throws(CommandError) -> Duration {
        guard let text = value("timeout") else { return .milliseconds(Int(seconds * 1000)) }
        guard let value = Double(text), value > 0 else { throw .usage("--timeout needs a number of seconds, got '\(text)'.") }
        return .milliseconds(Int(value * 1000))
    }

    /// The one subcommand word (`events add`), checked against the allowed ones.
    func subcommand(of command: String, _ allowed: [String]) throws(CommandError) -> String {
        guard let word = positional.first else {
            throw .usage("meowctl \(command) needs a subcommand: \(allowed.joined(separator: ", ")).")
        }
        guard allowed.contains(word) else {
            throw .usage("meowctl \(command) has no subcommand '\(word)'. Subcommands: \(allowed.joined(separator: ", ")).")
        }
        guard positional.count == 1 else { throw .usage("Unexpected argument '\(positional[1])'.") }
        return word
    }
}

