#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

@Suite("meowctl")
struct MeowCtlTests {
    @Test("call prints the reply and exits 0; an error reply exits 1; an unreachable service exits 2")
    func callExitCodes() async throws {
        let service = try await RunningService.start()
        let ok = try await MeowProcess.run("meowctl", ["call", "--socket", service.socket, "ping", #"{"echo":"meow"}"#])
        #expect(ok.status == 0)
        let reply = try JSONDecoder().decode(JSONValue.self, from: Data(ok.stdout.utf8))
        #expect(reply["result"]?["echo"] == "meow")

        let bad = try await MeowProcess.run("meowctl", ["call", "--socket", service.socket, "no.suchOp"])
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("unknownOp"))

        let usage = try await MeowProcess.run("meowctl", ["call", "--socket", service.socket, "ping", "[1]"])
        #expect(usage.status == 64)

        let missing = try await MeowProcess.run("meowctl", ["call", "--socket", service.directory.file("none.sock"), "ping"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("No such file"))
        _ = await service.process.stop()
    }

    @Test("an unknown command is a usage error naming it and the commands, with --help too")
    func unknownCommandIsUsage() async throws {
        for arguments in [["NOSUCH"], ["NOSUCH", "--help"]] {
            let run = try await MeowProcess.run("meowctl", arguments)
            #expect(run.status == 64, "\(arguments)")
            #expect(run.stderr.contains("Unknown command 'NOSUCH'") && run.stderr.contains("call, watch, tap"), "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(arguments)")
        }
        let help = try await MeowProcess.run("meowctl", ["doctor", "--help"])
        #expect(help.status == 0 && help.stdout.contains("doctor"))
    }

    @Test("call reads params past the 128 KiB a command-line argument may hold from --params-file FILE or - (stdin)")
    func callReadsLargeParams() async throws {
        let service = try await RunningService.start()
        let echo = String(repeating: "m", count: 300_000)
        let file = service.directory.file("params.json")
        try JSONWriter.text(["echo": .string(echo)] as JSONValue).write(toFile: file, atomically: true, encoding: .utf8)
        let meowctl = try ExecutableLocator.locate().path("meowctl")
        for source in ["--params-file \(file)", "--params-file - < \(file)"] {
            let run = try await MeowProcess.run("/bin/sh", ["-c", "\(meowctl) call --raw --socket \(service.socket) ping \(source)"])
            #expect(run.status == 0, "\(source): \(run.stderr)")
            #expect(try JSONParser.parse(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["result"]?["echo"]?.stringValue?.count == echo.count, "\(source)")
        }
        let both = try await MeowProcess.run("meowctl", ["call", "--socket", service.socket, "ping", "{}", "--params-file", file])
        #expect(both.status == 64)
        let notJSON = try await MeowProcess.run("/bin/sh", ["-c", "echo '[1]' | \(meowctl) call --socket \(service.socket) ping --params-file -"])
        #expect(notJSON.status == 64 && notJSON.stderr.contains("one JSON object"))
        _ = await service.process.stop()
    }

    @Test("watch --json prints events as JSON lines as they arrive")
    func watchPrintsEvents() async throws {
        let service = try await RunningService.start("sync-service")
        let watcher = try MeowProcess("meowctl", ["watch", "--socket", service.socket, "--topic", "service", "--count", "1", "--json"])
        #expect(await watcher.waitForLine(containing: "watching sync-service") != nil)
        service.process.signal(SIGTERM)
        #expect(await watcher.waitForExit() == 0)
        let line = watcher.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        let event = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
        #expect(event["event"] == "shuttingDown")
        #expect(event["seq"] == 1)
        _ = await service.process.waitForExit()
    }

    @Test("watch prints one readable line per event: time, service, who, what, outcome")
    func watchPrintsReadableLines() async throws {
        let service = try await RunningService.start("sync-service")
        let watcher = try MeowProcess("meowctl", ["watch", "--socket", service.socket, "--topic", "service", "--count", "1"])
        #expect(await watcher.waitForLine(containing: "watching sync-service") != nil)
        service.process.signal(SIGTERM)
        #expect(await watcher.waitForExit() == 0)
        let line = watcher.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        #expect((try? JSONParser.parse(line)) == nil, "not JSON by default: \(line)")
        #expect(line.contains("  sync-service  ") && line.contains("shuttingDown:") && line.contains("→ "), "\(line)")
        _ = await service.process.waitForExit()
    }

    @Test("tap passes bytes through unchanged, malformed ones included, and logs each frame with its direction")
    func tapIsTransparent() async throws {
        let directory = TemporaryDirectory()
        let upstream = directory.file("echo.sock")
        let tapSocket = directory.file("tap.sock")
        let logFile = directory.file("tap.log")
        let echo = try MeowProcess("echo-baseline", [upstream])
        #expect(await echo.waitForLine(containing: "ready") != nil)
        // --show-credentials: unparseable bytes are logged only then (a credential may be in them).
        let tap = try MeowProcess("meowctl", ["tap", "--listen", tapSocket, "--to", upstream, "--log", logFile, "--show-credentials"])
        #expect(await tap.waitForLine(containing: "tap ready") != nil)

        let connection = try RawConnection(path: tapSocket)
        let frames: [[UInt8]] = [
            Array(#"{"id":1,"op":"ping"}"#.utf8),
            [0xFF, 0xFE, 0x00, 0x7B],            // invalid UTF-8
            Array("not json at all".utf8),
            Array(String(repeating: "é", count: 40_000).utf8),  // spans many reads
        ]
        for frame in frames {
            connection.send(body: frame)
            #expect(connection.readFrame() == frame)   // the echo got exactly these bytes
        }
        // The log has every frame in both directions; invalid ones are kept as base64.
        let log = try String(contentsOfFile: logFile, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        let logged = log.filter { $0["event"] == "frame" }
        #expect(logged.filter { $0["dir"] == "c2s" }.count == 4)
        #expect(logged.filter { $0["dir"] == "s2c" }.count == 4)
        #expect(logged.first?["frame"]?["op"] == "ping")
        #expect(logged.contains { $0["invalid"] == "invalidUTF8" && $0["raw"] == .string(Data(frames[1]).base64EncodedString()) })
        #expect(logged.contains { $0["invalid"] == "invalidJSON" })
        tap.kill()
        echo.kill()
    }

    @Test("tap between a client and a real service: the service's answers arrive unchanged")
    func tapToService() async throws {
        let service = try await RunningService.start("store-service")
        let tapSocket = service.directory.file("tap.sock")
        let tap = try MeowProcess("meowctl", ["tap", "--listen", tapSocket, "--to", service.socket])
        #expect(await tap.waitForLine(containing: "tap ready") != nil)
        let viaTap = try RawConnection(path: tapSocket)
        #expect(try viaTap.hello()["ok"] == true)
        viaTap.send(body: [0xC3, 0x28])   // invalid UTF-8 reaches the service, which answers invalidUTF8
        #expect(try viaTap.nextMessage()["error"]?["code"] == "invalidUTF8")
        viaTap.send(bytes: [0, 0, 0, 0])  // so does a zero length, and the service closes
        #expect(try viaTap.nextMessage()["error"]?["code"] == "emptyFrame")
        #expect(viaTap.waitForClose())
        tap.kill()
        _ = await service.process.stop()
    }
}
