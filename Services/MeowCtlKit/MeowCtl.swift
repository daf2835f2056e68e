#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire

/// meowctl: the command-line tool for people and scripts. `call`, `watch` and `tap` work at the
/// socket level against either service.
public enum MeowCtl {
    static let usage = """
    meowctl — talk to a store-service or sync-service over its Unix socket

    Usage:
      meowctl call  --socket PATH [--credential C | --credential-file FILE] [--timeout SECONDS] [--raw] OP [PARAMS_JSON | --params-file FILE|-]
          Says hello, sends one request, prints the reply as readable JSON.
          Exit 0 on an ok reply, 1 on an error reply, 2 if the service cannot be reached.
      meowctl watch (--socket PATH | --dir DIR [--device NAME]) [--credential C | --credential-file FILE] [--topic T ...] [--count N] [--json]
          Subscribes (default: every topic the service offers) and prints one line per event as
          it arrives: time, service, who, what, outcome. --json prints each event as one JSON
          line instead. --count N exits after N events. --dir DIR: a local deployment's device
          (--device NAME, default device-a; sync-service for the cloud).
      meowctl tap   --listen PATH --to PATH [--log FILE] [--show-credentials]
          A transparent proxy: clients connect to --listen, bytes go to --to unchanged (malformed
          ones included), and every frame in both directions is logged as one JSON line with time,
          connection and direction (to stdout, or --log FILE, created 0600). Credentials in
          logged frames read "<redacted>" unless --show-credentials, and so do the bytes of a
          frame that is not JSON (a credential in them cannot be found).

      meowctl demo  --dir DIR
          Tells the MeowCare story against a local deployment (deploy/meowcare-local up --dir DIR),
          checking every step; exit 0 only if every check passed. deploy/demo.sh runs it all.

    For people (tables by default, --json for scripts; 'meowctl COMMAND --help' for details):
      meowctl events   add|list                 care events on a device
      meowctl sessions add|list                 care sessions on a device
      meowctl insert   ENTITY [VALUES_JSON]     one object of any entity of the device's model, saved
      meowctl share    create|invite|permission|remove|stop|invitations|accept|leave|list
      meowctl sync     now|send|fetch|status    a device's cloud mirror, with progress
      meowctl doctor   --socket DEVICE [--cloud SYNC --credential C]   invariant violations, explained
      meowctl diff     --socket DEVICE --cloud SYNC --credential C     a device against the cloud, zone by zone
      meowctl log      --socket SYNC --credential ADMIN [filters] [--follow]   the cloud's request log
      meowctl snapshot export|import --socket SYNC --credential ADMIN --file PATH   the whole cloud to or from a file
      meowctl schema   export|import|diff|deploy|reset-development --socket SYNC --credential ADMIN   the cloud's schema
      meowctl report   --dir DIR -o FILE        what happened, as one HTML page (timeline, refusals, conflicts, shares)

    For app teams' flows (docs/EXPLORING.md):
      meowctl explore  FLOW.json [--seeds A..B] [--schedules N | --seconds S] [--replay SEED] [--json]
          Runs the flow under seeded schedules on a cluster of its own; exit 1 on a failing check.

    A credential (--credential C) can also come from --credential-file FILE (mode 0600) or
    $MEOW_CREDENTIAL: a command line is visible to every local user.

    Every command takes --help. Exit codes: 0 ok, 1 error reply, 2 unreachable, 64 usage.
    """

    /// The commands in the order the usage lists them; an unknown name is a usage error (exit 64),
    /// with or without --help, so a typo never looks like success in a script.
    static let commands: KeyValuePairs<String, @Sendable ([String]) async throws -> Void> = [
        "call": { try await CallCommand.run($0) },
        "watch": { try await WatchCommand.run($0) },
        "tap": { try TapCommand.run($0) },
        "demo": { try await DemoCommand.run($0) },
        "events": { try await EventsCommand.run($0) },
        "sessions": { try await SessionsCommand.run($0) },
        "insert": { try await InsertCommand.run($0) },
        "share": { try await ShareCommand.run($0) },
        "sync": { try await SyncCommand.run($0) },
        "doctor": { try await DoctorCommand.run($0) },
        "diff": { try await DiffCommand.run($0) },
        "log": { try await LogCommand.run($0) },
        "snapshot": { try await SnapshotCommand.run($0) },
        "schema": { try await SchemaCommand.run($0) },
        "report": { try await ReportCommand.run($0) },
        "explore": { try await ExploreCommand.run($0) },
    ]

    /// Runs meowctl with the given arguments (without the program name); returns the exit code.
    public static func main(_ arguments: [String]) async -> Int32 {
        guard let command = arguments.first, command != "--help", command != "-h", command != "help" else {
            print(usage)
            return arguments.isEmpty ? 64 : 0
        }
        let rest = Array(arguments.dropFirst())
        do {
            if command == "--version" || command == "version" {
                print("meowctl \(MeowVersion.current)")
                return 0
            }
            guard let run = commands.first(where: { $0.key == command })?.value else {
                throw CommandError.usage("Unknown command '\(command)'. Commands: \(commands.map(\.key).joined(separator: ", ")).")
            }
            if rest.contains("--help") {
                print(PeopleCommands.help[command] ?? usage)
                return 0
            }
            try await run(rest)
            return 0
        } catch let error as CommandError {
            switch error {
            case let .usage(message): printError("meowctl: \(message)\nRun 'meowctl --help' for usage.")
            case let .unavailable(message): printError("meowctl: \(message)")
            case .errorReply: break
            }
            return error.exitCode
        } catch {
            printError("meowctl: \(error)")
            return 2
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static func prettyJSON(_ value: some Encodable) -> String {
        (try? JSONTextEncoder(options: [.prettyPrinted, .sortedKeys]).text(value)) ?? "\(value)"
    }

    static func compactJSON(_ value: some Encodable) -> String {
        (try? JSONTextEncoder(options: .sortedKeys).text(value)) ?? "\(value)"
    }

    /// Connects and says hello; failures become exit code 2 (or 1 for an error reply to hello).
    static func connect(socket: String, credential: String?, timeout: Duration) async throws(CommandError) -> (WireClient, HelloResult) {
        let client: WireClient
        do {
            client = try WireClient(socketPath: socket, timeout: timeout)
        } catch {
            throw .unavailable(error.message)
        }
        do {
            let hello = try await client.hello(client: "meowctl", credential: credential)
            return (client, hello)
        } catch {
            print(prettyJSON(["id": .string("hello"), "ok": false, "error": try! JSONValue(encoding: error)] as [String: JSONValue]))
            client.close()
            if error.code == .connectionClosed || error.code == .timedOut { throw .unavailable(error.message) }
            throw .errorReply
        }
    }
}

enum CallCommand {
    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments(arguments, flags: ["raw"])
        try args.check(known: ["socket", "credential", "timeout", "raw", "params-file"], command: "call")
        let socket = try args.required("socket", for: "call")
        guard let op = args.positional.first else { throw .usage("meowctl call needs an OP, e.g. meowctl call --socket PATH ping") }
        guard args.positional.count <= 2 else { throw .usage("meowctl call takes OP and at most one PARAMS_JSON argument (quote it).") }
        var params: JSONValue = .object([:])
        if let file = args.value("params-file") {
            // A command-line argument stops at 128 KiB (the kernel's limit); a file or stdin does not.
            guard args.positional.count == 1 else { throw .usage("Give PARAMS_JSON or --params-file, not both.") }
            params = try readParams(file)
        } else if args.positional.count == 2 {
            guard let parsed = try? JSONParser.parse(args.positional[1]), parsed.objectValue != nil else {
                throw .usage("PARAMS_JSON must be a JSON object, e.g. '{\"echo\": 1}'; got: \(args.positional[1])")
            }
            params = parsed
        }
        let seconds = Double(args.value("timeout") ?? "30") ?? 30
        let (client, _) = try await MeowCtl.connect(socket: socket, credential: try args.credential(),
                                                    timeout: .milliseconds(Int(seconds * 1000)))
        defer { client.close() }
        do {
            let result = try await client.call(op, params)
            let reply: JSONValue = ["ok": true, "result": result]
            print(args.has("raw") ? MeowCtl.compactJSON(reply) : MeowCtl.prettyJSON(reply))
        } catch {
            let reply: JSONValue = ["ok": false, "error": (try? JSONValue(encoding: error)) ?? .null]
            print(args.has("raw") ? MeowCtl.compactJSON(reply) : MeowCtl.prettyJSON(reply))
            if error.code == .connectionClosed || error.code == .timedOut { throw .unavailable(error.message) }
            throw .errorReply
        }
    }
}

extension CallCommand {
    /// The params object in `path` (`-`: standard input).
    static func readParams(_ path: String) throws(CommandError) -> JSONValue {
        let data: Data?
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: path)
        }
        guard let data else { throw .usage("Cannot read --params-file \(path).") }
        guard let parsed = try? JSONParser.parse(Array(data)), parsed.objectValue != nil else {
            throw .usage("--params-file \(path) must hold one JSON object (\(data.count) bytes read).")
        }
        return parsed
    }
}

enum WatchCommand {
    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments(arguments, flags: ["json"])
        try args.check(known: ["socket", "credential", "topic", "count", "json", "dir", "device"], command: "watch")
        let socket = try args.deviceSocket(for: "watch")
        let limit = args.value("count").flatMap(Int.init)
        let (client, hello) = try await MeowCtl.connect(socket: socket, credential: try args.credential(), timeout: .seconds(30))
        defer { client.close() }
        let topics = args.all("topic").isEmpty ? hello.topics : args.all("topic")
        do {
            let subscribed = try await client.call("subscribe", ["topics": JSONValue.array(topics.map { .string($0) })])
            MeowCtl.printError("meowctl: watching \(hello.service) (\(socket)), topics: \(subscribed["topics"].map(MeowCtl.compactJSON) ?? "[]")")
        } catch {
            print(MeowCtl.prettyJSON(["ok": false, "error": (try? JSONValue(encoding: error)) ?? .null] as [String: JSONValue]))
            throw .errorReply
        }
        var seen = 0
        for await event in client.events {
            let now = Date()
            if args.has("json") {
                let line: JSONValue = ["ts": .string(now.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))),
                                       "event": .string(event.name), "seq": .int(Int(event.seq)), "data": event.data]
                print(MeowCtl.compactJSON(line))
            } else {
                print(WatchLine.text(event: event.name, data: event.data, service: hello.service, time: now))
            }
            fflush(nil)
            seen += 1
            if let limit, seen >= limit { return }
        }
        throw .unavailable("The service closed the connection.")
    }
}
