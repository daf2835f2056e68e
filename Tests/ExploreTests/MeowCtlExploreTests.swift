import Foundation
import MeowCareTesting
import MeowWire
import TestSupport
import Testing

/// `meowctl explore FLOW.json` (docs/MEOWCTL.md, docs/EXPLORING.md): the flow file runs on a
/// cluster meowctl starts itself; a correct flow passes, a wrong one fails naming the check, and
/// the replay commands it prints give the same shrunk schedule and the same history. The team's
/// invariant is served over the steps socket by a Python process, as any language would.
@Suite("meowctl explore", .serialized, .timeLimit(.minutes(10)))
struct MeowCtlExploreTests {
    /// Two devices of one user edit one session's title.
    static let flowText = """
    {"name": "two devices edit a title",
     "actors": [
       {"device": "A", "user": "olivia", "steps": [
         {"op": "insert", "object": "s1", "entity": "CareSession", "fields": ["title"]},
         {"op": "update", "object": "s1", "fields": ["title"]}]},
       {"device": "B", "user": "olivia", "steps": [
         {"op": "update", "object": "s1", "fields": ["title"]},
         {"op": "update", "object": "s1", "fields": ["title"]}]}]
    """

    /// The app assumed no send ever meets another device's edit: wrong in every order where B
    /// edits a copy A has changed on the server meanwhile.
    static let wrongFlowText = flowText + #", "invariants": ["sendsNeverConflict"]}"#

    /// A steps server in Python: 4-byte big-endian length + UTF-8 JSON, one request per connection.
    static let stepsServer = #"""
    import json, os, socket, struct, sys
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sys.argv[1])
    server.listen(8)
    print("steps server ready", file=sys.stderr, flush=True)
    def read(connection, count):
        data = b""
        while len(data) < count:
            chunk = connection.recv(count - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data
    while True:
        connection, _ = server.accept()
        with connection:
            request = json.loads(read(connection, struct.unpack(">I", read(connection, 4))[0]))
            if request.get("invariant") == "sendsNeverConflict":
                reply = {"violations": [f"{entry['actor']}'s sync.send #{entry['index']} met another device's edit"
                                        for entry in request["run"]["history"]
                                        if entry["op"] == "sync.send" and entry["outcome"]["kind"] == "ok"
                                        and (entry["outcome"]["result"] or {}).get("conflictsResolved", 0) > 0]}
            else:
                reply = {"ok": False, "error": {"code": "unknownStep", "message": f"no step {request.get('step')}"}}
            body = json.dumps(reply).encode()
            connection.sendall(struct.pack(">I", len(body)) + body)
    """#

    @Test("a correct flow file passes every schedule")
    func correctFlowPasses() async throws {
        let directory = TemporaryDirectory(prefix: "mx")
        let flow = directory.file("flow.json")
        try (Self.flowText + "}").write(toFile: flow, atomically: true, encoding: .utf8)
        let run = try await MeowProcess.run("meowctl", ["explore", flow, "--seeds", "1..12", "--json"], timeout: .seconds(300))
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let report = try JSONParser.parse(run.stdout)
        #expect(report["passed"] == true)
        #expect(report["schedules"] == 12)
        #expect(report["firstSeed"] == "1" && report["lastSeed"] == "12")
    }

    @Test("the budget is a count of schedules or a number of seconds, never both")
    func budget() async throws {
        let directory = TemporaryDirectory(prefix: "mx")
        let flow = directory.file("flow.json")
        try (Self.flowText + "}").write(toFile: flow, atomically: true, encoding: .utf8)
        let counted = try await MeowProcess.run("meowctl", ["explore", flow, "--schedules", "3", "--seed", "5", "--json"], timeout: .seconds(300))
        #expect(counted.status == 0, "\(counted.stdout)\n\(counted.stderr)")
        let countedReport = try JSONParser.parse(counted.stdout)
        #expect(countedReport["schedules"] == 3 && countedReport["firstSeed"] == "5" && countedReport["lastSeed"] == "7", "\(counted.stdout)")

        let timed = try await MeowProcess.run("meowctl", ["explore", flow, "--seconds", "0.5", "--json"], timeout: .seconds(300))
        #expect(timed.status == 0, "\(timed.stdout)\n\(timed.stderr)")
        let timedReport = try JSONParser.parse(timed.stdout)
        let schedules = try #require(timedReport["schedules"]?.intValue, "\(timed.stdout)")
        #expect(schedules >= 1 && timedReport["firstSeed"] == "1" && timedReport["lastSeed"] == .string("\(schedules)"), "\(timed.stdout)")

        for bad in [["--seconds", "0"], ["--seconds", "soon"], ["--schedules", "3", "--seconds", "1"]] {
            let refused = try await MeowProcess.run("meowctl", ["explore", flow] + bad)
            #expect(refused.status == 64, "\(bad): \(refused.stderr)")
            #expect(refused.stderr.contains("--seconds"), "\(bad): \(refused.stderr)")
        }
    }

    @Test("a wrong flow fails naming the check, and its replay commands give the same shrunk schedule")
    func wrongFlowFailsAndReplays() async throws {
        let directory = TemporaryDirectory(prefix: "mx")
        let flow = directory.file("wrong.json"), socket = directory.file("steps.sock")
        try Self.wrongFlowText.write(toFile: flow, atomically: true, encoding: .utf8)
        let server = try MeowProcess("/usr/bin/env", ["python3", "-c", Self.stepsServer, socket])
        defer { server.kill() }
        #expect(await server.waitForLine(containing: "steps server ready") != nil)

        // Without the socket, meowctl says what the flow needs.
        let unserved = try await MeowProcess.run("meowctl", ["explore", flow])
        #expect(unserved.status == 64)
        #expect(unserved.stderr.contains("invariant \"sendsNeverConflict\"") && unserved.stderr.contains("--steps-socket"), "\(unserved.stderr)")

        let found = try await MeowProcess.run("meowctl", ["explore", flow, "--schedules", "60", "--faults", "none", "--steps-socket", socket,
                                                          "--json", "--history", directory.file("found.jsonl")], timeout: .seconds(300))
        #expect(found.status == 1, "\(found.stdout)\n\(found.stderr)")
        let report = try JSONParser.parse(found.stdout)
        let failure = try #require(report["failure"], "\(found.stdout)")
        #expect(failure["check"] == "sendsNeverConflict")
        #expect(failure["shrunk"]?["failures"]?.arrayValue?.first?["explanation"]?.stringValue?.contains("met another device's edit") == true, "\(found.stdout)")
        let shrunkChoices = try #require(failure["shrunk"]?["choices"])
        // The shrunk run as a page beside the flow file, with the failed check on it.
        let page = try #require(report["replay"]?["page"]?.stringValue)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.contains("sendsNeverConflict"), "\(page)")
        let command = try #require(report["replay"]?["command"]?.stringValue)
        #expect(command.contains("--replay \(failure["seed"]?.stringValue ?? "?")") && command.contains("--faults none"), "\(command)")

        // The printed command, run as printed: the same seed, drawn and shrunk to the same schedule.
        let again = try await MeowProcess.run("/bin/sh", ["-c", command + " --json --history " + directory.file("again.jsonl")],
                                              environment: ["PATH": try ExecutableLocator.locate().directory + ":/usr/bin:/bin"], timeout: .seconds(300))
        #expect(again.status == 1, "\(again.stdout)\n\(again.stderr)")
        let replayed = try JSONParser.parse(again.stdout)
        #expect(replayed["failure"]?["check"] == "sendsNeverConflict")
        #expect(replayed["failure"]?["shrunk"]?["choices"] == shrunkChoices)
        #expect(try Self.normalizedHistory(directory.file("again.jsonl")) == Self.normalizedHistory(directory.file("found.jsonl")))

        // The shrunk schedule itself, from the file the failure wrote: the same history again.
        let choicesCommand = try #require(report["replay"]?["choicesCommand"]?.stringValue)
        let exact = try await MeowProcess.run("/bin/sh", ["-c", choicesCommand + " --history " + directory.file("exact.jsonl")],
                                              environment: ["PATH": try ExecutableLocator.locate().directory + ":/usr/bin:/bin"], timeout: .seconds(120))
        #expect(exact.status == 1, "\(exact.stdout)\n\(exact.stderr)")
        #expect(exact.stdout.contains("FAILED: check \"sendsNeverConflict\""), "\(exact.stdout)")
        #expect(try Self.normalizedHistory(directory.file("exact.jsonl")) == Self.normalizedHistory(directory.file("found.jsonl")))
    }

    @Test("bad command lines and flow files are refused with what to do")
    func badInput() async throws {
        let directory = TemporaryDirectory(prefix: "mx")
        let flow = directory.file("bad.json")
        try #"{"actors": [{"device": "A", "user": "olivia", "steps": [{"op": "paint", "object": "s1"}]}]}"#
            .write(toFile: flow, atomically: true, encoding: .utf8)
        let bad = try await MeowProcess.run("meowctl", ["explore", flow])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("unknown step op \"paint\""), "\(bad.stderr)")
        let faults = try await MeowProcess.run("meowctl", ["explore", flow, "--faults", "meteor=1"])
        #expect(faults.status == 64)
        #expect(faults.stderr.contains("no fault kind \"meteor\""), "\(faults.stderr)")
        let both = try await MeowProcess.run("meowctl", ["explore", flow, "--seed", "1", "--seeds", "1..2"])
        #expect(both.status == 64)
    }

    /// The history's lines with the cloud's request-log numbers made relative to the run's
    /// first (they count every request the cloud served, earlier runs' too).
    static func normalizedHistory(_ path: String) throws -> [JSONValue] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let entries = try text.split(separator: "\n").map { try JSONParser.parse(String($0)) }
        let first = entries.flatMap { $0["cloudRequests"]?.arrayValue ?? [] }.compactMap(\.intValue).min() ?? 0
        return entries.map { entry in
            guard var object = entry.objectValue else { return entry }
            object["cloudRequests"] = .array((entry["cloudRequests"]?.arrayValue ?? []).map { .int(($0.intValue ?? 0) - first) })
            return .object(object)
        }
    }
}
