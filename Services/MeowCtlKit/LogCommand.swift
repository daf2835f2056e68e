import Foundation
import MeowWire

/// `meowctl log`: the sync-service's request log (admin.requestLog), filtered, with every
/// permission decision and its reason.
enum LogCommand {
    static let help = """
    meowctl log — the sync-service's request log, with permission decisions and their reasons

    Usage:
      meowctl log --socket SYNC_SOCKET (--credential ADMIN | --credential-file FILE) [--user U] [--zone Z] [--op OP]
                  [--result CODE] [--denied] [--limit N] [--follow] [--json]

    Filters (all must match): --user the acting user; --zone a zone name or owner/zone the
    request touched; --op the operation (records.modify, shares.accept, …); --result the answer's
    code (ok, partialFailure, permissionFailure, …); --denied only requests with a denied
    permission decision. --limit N shows the last N matching entries (default all the log keeps:
    the last 10,000 requests). --follow keeps printing new entries as they come (Ctrl-C stops).
    --json prints one JSON object per line (the log's own entries).
    Exit codes: 0 ok, 1 error reply (e.g. permissionFailure: not the admin credential),
    2 unreachable, 64 usage.
    """

    struct Filter {
        var user: String?
        var zone: String?
        var op: String?
        var result: String?
        var deniedOnly: Bool

        func matches(_ entry: JSONValue) -> Bool {
            if let user, entry["user"]?.stringValue != user { return false }
            if let op, entry["op"]?.stringValue != op { return false }
            if let result, entry["code"]?.stringValue != result { return false }
            if let zone {
                let zones = (entry["zones"]?.arrayValue ?? []).compactMap(\.stringValue)
                    + (entry["permissions"]?.arrayValue ?? []).compactMap { $0["zone"]?.stringValue }
                guard zones.contains(where: { $0 == zone || $0.hasSuffix("/" + zone) }) else { return false }
            }
            if deniedOnly, !(entry["permissions"]?.arrayValue ?? []).contains(where: { $0["decision"] == "denied" }) { return false }
            return true
        }
    }

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "log",
                                       options: ["socket", "credential", "user", "zone", "op", "result", "limit", "timeout"],
                                       flags: ["follow", "denied"])
        let (socket, credential) = try args.adminTarget(for: "log")
        let filter = Filter(user: args.value("user"), zone: args.value("zone"), op: args.value("op"),
                            result: args.value("result"), deniedOnly: args.has("denied"))
        let limit = try args.integer("limit")
        let output = args.output
        let cloud = try await ServiceSession.open(socket: socket, credential: credential, output: output, timeout: try args.timeout(default: 30))
        defer { cloud.close() }
        var (entries, last) = try await read(cloud, after: 0)
        entries = entries.filter(filter.matches)
        if let limit { entries = Array(entries.suffix(limit)) }
        if !output.json { output.say(Table(["SEQ", "TIME", "USER", "OP", "DATABASE", "ZONES", "RESULT", "MS", "CLIENT"], []).headerLine) }
        show(entries, output)
        guard args.has("follow") else {
            if !output.json { output.say("\(entries.count) request\(entries.count == 1 ? "" : "s")") }
            return
        }
        while true {
            try? await Task.sleep(for: .milliseconds(500))
            let (more, next) = try await read(cloud, after: last)
            last = next
            show(more.filter(filter.matches), output)
        }
    }

    /// Every entry after `after`, paged; and the last sequence number seen.
    static func read(_ cloud: ServiceSession, after: Int) async throws(CommandError) -> ([JSONValue], Int) {
        var entries: [JSONValue] = []
        var last = after
        while true {
            let page = try await cloud.call("admin.requestLog", ["after": .int(last), "limit": 1000, "form": "entries"])["entries"]?.arrayValue ?? []
            entries += page
            last = page.last?["seq"]?.intValue ?? last
            if page.count < 1000 { return (entries, last) }
        }
    }

    static func show(_ entries: [JSONValue], _ output: Output) {
        for entry in entries {
            if output.json {
                print(MeowCtl.compactJSON(entry))
                continue
            }
            let time = entry["time"]?.doubleValue.map {
                Date(timeIntervalSince1970: $0).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            } ?? "–"
            let zones = (entry["zones"]?.arrayValue ?? []).map(\.cell).joined(separator: ",")
            let milliseconds = entry["milliseconds"]?.doubleValue.map { String(format: "%.1f", $0) } ?? "–"
            print([entry["seq"].cell, time, entry["user"].cell, entry["op"].cell, entry["database"].cell,
                         zones.isEmpty ? "–" : zones, entry["code"].cell, milliseconds, entry["client"].cell].joined(separator: "  "))
            for decision in entry["permissions"]?.arrayValue ?? [] {
                let record = decision["recordName"].map { $0.isNull ? "" : " record \($0.cell)" } ?? ""
                print("      \(decision["decision"].cell): \(decision["reason"].cell) (zone \(decision["zone"].cell)\(record))")
            }
        }
        fflush(nil)
    }
}

extension Table {
    /// The header row alone, for output that streams its rows.
    var headerLine: String { headers.joined(separator: "  ") }
}
