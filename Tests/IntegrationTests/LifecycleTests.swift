#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

@Suite("Service lifecycle")
struct LifecycleTests {
    @Test("hello names the service, version, protocol, limits; info reports persistence and connections",
          arguments: ["store-service", "sync-service"])
    func helloAndInfo(executable: String) async throws {
        let service = try await RunningService.start(executable)
        let client = try WireClient(socketPath: service.socket)
        let hello = try await client.hello(client: "lifecycle-test")
        #expect(hello.service == executable)
        #expect(hello.protocolVersion == 1)
        #expect(hello.protocol == "meowcare-wire")
        #expect(hello.limits.maxFrameBytes == 16 * 1024 * 1024)
        let info = try await client.call("info", Empty())
        #expect(info["persistence"]?["mode"] == "inMemory")
        #expect(info["connections"]?["open"] == 1)
        #expect(info["socket"]?["path"] == .string(service.socket))
        #expect(info["ops"]?.arrayValue?.contains("ping") == true)
        let health = try await client.call("health", Empty())
        #expect(health["ready"] == true)
        client.close()
        _ = await service.process.stop()
    }

    @Test("A result reader reads a success reply from its bytes (the completion gets null); a reply it declines, and an error, come as trees")
    func resultReaderReadsRepliesFromTheirBytes() async throws {
        let service = try await RunningService.start("sync-service")
        let client = try WireClient(socketPath: service.socket)
        _ = try await client.hello(client: "reader-test")
        func ping(_ echo: JSONValue, op: String = "ping", accept: Bool) async -> (read: String?, reply: Result<JSONValue, WireError>) {
            let read = Mutex<String?>(nil)
            let reply: Result<JSONValue, WireError> = await withCheckedContinuation { continuation in
                client.send(op, ["echo": echo] as JSONValue, reader: { bytes in
                    read.withLock { $0 = String(decoding: bytes, as: UTF8.self) }
                    return accept
                }) { continuation.resume(returning: $0) }
            }
            return (read.withLock { $0 }, reply)
        }
        let taken = await ping(["n": 1, "s": "é"], accept: true)
        let text = try #require(taken.read)
        #expect(try JSONParser.parse(text) == ["pong": true, "echo": ["n": 1, "s": "é"]], "the reader gets exactly the result's bytes")
        #expect(try taken.reply.get() == .null)
        let declined = await ping("x", accept: false)
        #expect(declined.read != nil)
        #expect(try declined.reply.get()["echo"] == "x", "a reply the reader declines is parsed as usual")
        let failed = await ping("x", op: "no.such.op", accept: true)
        #expect(failed.read == nil, "an error reply is not the reader's")
        if case let .failure(error) = failed.reply { #expect(error.code == .unknownOp) } else { Issue.record("expected an error") }
        client.close()
        _ = await service.process.stop()
    }

    @Test("info.storeLock counts the store lock's use: a save takes it and holds it for a while; waits are counted apart")
    func storeLockUseIsReported() async throws {
        let service = try await RunningService.start("store-service")
        let client = try WireClient(socketPath: service.socket)
        _ = try await client.hello(client: "lock-test")
        let before = try await client.call("info", Empty())["storeLock"]
        let taken = try #require(before?["acquisitions"]?.intValue)
        #expect(before?["heldSeconds"]?.doubleValue ?? -1 >= 0 && before?["waitedSeconds"]?.doubleValue ?? -1 >= 0)
        #expect(await CrashHarnessTests.save(client, batch: 0, count: 50))
        let after = try await client.call("info", Empty())["storeLock"]
        #expect(try #require(after?["acquisitions"]?.intValue) > taken)
        #expect(try #require(after?["heldSeconds"]?.doubleValue) > before?["heldSeconds"]?.doubleValue ?? 0)
        client.close()
        _ = await service.process.stop()
    }

    @Test("with MEOW_EXIT_WITH_PID (the test support sets its own pid) a service stops cleanly once that process has ended")
    func exitsWithItsParent() async throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("orphan.sock")
        // A shell starts the service in the background, watching the shell, prints its pid and
        // exits: the watched process ends at once (perhaps before the service looks).
        let started = try await MeowProcess.run("/bin/sh", ["-c", "MEOW_EXIT_WITH_PID=$$ \"$0\" --socket \"$1\" --in-memory >/dev/null 2>&1 </dev/null & echo $!",
                                                    try ExecutableLocator.locate().path("store-service"), socket])
        let pid = try #require(pid_t(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let ended = try await MeowProcess.waitForEnd(ofProcess: pid, timeout: .milliseconds(20_000))
        if !ended { kill(pid, SIGKILL) }
        #expect(ended, "the orphaned service did not stop")
        // A clean stop removes its socket (a crash or SIGKILL would leave it).
        #expect(access(socket, F_OK) != 0)
    }

    @Test("the socket's directory is 0700 and the socket 0600")
    func socketModes() async throws {
        let service = try await RunningService.start()
        var info = stat()
        #expect(stat(service.socket, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(stat((service.socket as NSString).deletingLastPathComponent, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        _ = await service.process.stop()
    }

    @Test("SIGTERM: exit 0, the socket file is removed, subscribers get shuttingDown",
          arguments: ["store-service", "sync-service"])
    func sigterm(executable: String) async throws {
        let service = try await RunningService.start(executable)
        let client = try WireClient(socketPath: service.socket)
        try await client.hello(client: "t")
        _ = try await client.call("subscribe", ["topics": ["service"]])
        var events = client.events.makeAsyncIterator()
        service.process.signal(SIGTERM)
        let event = await events.next()
        #expect(event?.name == "shuttingDown")
        #expect(await service.process.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: service.socket))
    }

    @Test("SIGINT stops the service cleanly too")
    func sigint() async throws {
        let service = try await RunningService.start()
        service.process.signal(SIGINT)
        #expect(await service.process.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: service.socket))
    }

    @Test("a stale socket file left by kill -9 is replaced at the next start")
    func staleSocket() async throws {
        let first = try await RunningService.start()
        first.process.kill()
        #expect(FileManager.default.fileExists(atPath: first.socket))
        let second = try await MeowProcess.start("store-service", ["--socket", first.socket, "--in-memory"])
        #expect(await second.waitForLine(containing: "replaced a stale socket") != nil)
        let client = try RawConnection(path: first.socket)
        #expect(try client.hello()["ok"] == true)
        _ = await second.stop()
    }

    @Test("a live socket is refused with a clear message; the running service is untouched")
    func liveSocket() async throws {
        let service = try await RunningService.start()
        let result = try await MeowProcess.run("store-service", ["--socket", service.socket, "--in-memory"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("already listening"))
        #expect(try service.stillServes())
        _ = await service.process.stop()
    }

    @Test("a regular file at the socket path is never replaced")
    func notASocket() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("file.sock")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        let result = try await MeowProcess.run("store-service", ["--socket", path, "--in-memory"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a socket"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
    }

    @Test("requests may be pipelined: 200 in one write, 200 replies with their ids, in order")
    func pipelining() async throws {
        let service = try await RunningService.start()
        let connection = try service.greeted()
        var bytes: [UInt8] = []
        for index in 0..<200 {
            bytes += FrameEncoder.frame(Array(#"{"id":"r\#(index)","op":"ping","params":{"echo":\#(index)}}"#.utf8))
        }
        connection.send(bytes: bytes)
        for index in 0..<200 {
            let reply = try connection.nextMessage()
            #expect(reply["id"] == .string("r\(index)"))
            #expect(reply["result"]?["echo"] == .int(index))
        }
        _ = await service.process.stop()
    }

    @Test("the Swift client matches out-of-order waiting to ids and delivers concurrent calls")
    func concurrentClientCalls() async throws {
        let service = try await RunningService.start("sync-service")
        let client = try WireClient(socketPath: service.socket)
        try await client.hello(client: "t")
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<50 {
                group.addTask {
                    let reply = try await client.call("ping", ["echo": JSONValue.int(index)])
                    return reply["echo"] == .int(index)
                }
            }
            for try await matched in group { #expect(matched) }
        }
        client.close()
        _ = await service.process.stop()
    }

    @Test("the client library times out a request that gets no reply")
    func clientTimeout() async throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("echo.sock")
        // The echo server answers nothing a client would match: ids come back as requests.
        let echo = try MeowProcess("echo-baseline", [socket])
        _ = await echo.waitForLine(containing: "ready")
        let client = try WireClient(socketPath: socket)
        await #expect(throws: WireError.self) {
            _ = try await client.call("ping", Empty(), timeout: .milliseconds(200))
        }
        client.close()
        echo.kill()
    }

    @Test("peers of another uid are refused with peerNotAllowed unless allowed", .enabled(if: getuid() == 0))
    func otherUID() async throws {
        // Run the service as nobody; this test process (root) is then a peer of another uid.
        let directory = TemporaryDirectory()
        chown(directory.path, 65534, 65534)
        let socket = directory.file("nobody.sock")
        let service = try await MeowProcess.start("/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", try ExecutableLocator.locate().path("store-service"), "--socket", socket, "--in-memory"])
        let refused = try RawConnection(path: socket)
        let reply = try refused.nextMessage()
        #expect(reply["error"]?["code"] == "peerNotAllowed")
        #expect(refused.waitForClose())
        #expect(await service.waitForLine(containing: "refused a peer of another uid") != nil)
        _ = await service.stop()

        let allowed = try await MeowProcess.start("/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", try ExecutableLocator.locate().path("store-service"), "--socket", socket, "--in-memory", "--allow-uid", "0"])
        #expect(try RawConnection(path: socket).hello()["ok"] == true)
        _ = await allowed.stop()
    }

    @Test("systemd socket activation: the service serves the socket it was passed")
    func socketActivation() async throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("act.sock")
        let service = try MeowProcess("/usr/bin/systemd-socket-activate",
                                         ["-l", socket, try ExecutableLocator.locate().path("sync-service"), "--in-memory", "--socket", directory.file("unused.sock")])
        _ = await service.waitForLine(containing: "Listening on")
        // The service starts on the first connection; hello proves it answered on the passed fd.
        let client = try WireClient(socketPath: socket)
        try await client.hello(client: "activation-test")
        let info = try await client.call("info", Empty())
        #expect(info["socket"]?["activation"] == "systemd")
        #expect(!FileManager.default.fileExists(atPath: directory.file("unused.sock")))
        client.close()
        _ = await service.stop()
    }

    @Test("--help works on every executable", arguments: ["store-service", "sync-service", "meowctl"])
    func help(executable: String) async throws {
        let result = try await MeowProcess.run(executable, ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--socket") || result.stdout.contains("Usage"))
    }

    @Test("--config FILE supplies options; the command line wins over the file")
    func configFile() async throws {
        let directory = TemporaryDirectory()
        let config = directory.file("sync.conf")
        try """
        # a config file as deploy/ writes them
        socket = \(directory.file("from-file.sock"))
          # comments may be indented
        in-memory
        max-frame-bytes = 4096
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let fromFile = try await MeowProcess.start("sync-service", ["--config", config])
        let reply = try RawConnection(path: directory.file("from-file.sock")).hello()
        #expect(reply["result"]?["limits"]?["maxFrameBytes"] == 4096)
        _ = await fromFile.stop()
        let overridden = try await MeowProcess.start("sync-service", ["--config", config, "--socket", directory.file("cli.sock")])
        #expect(try RawConnection(path: directory.file("cli.sock")).hello()["ok"] == true)
        #expect(!FileManager.default.fileExists(atPath: directory.file("from-file.sock")))
        _ = await overridden.stop()
        try "no-such-option = 1\n".write(toFile: config, atomically: true, encoding: .utf8)
        let bad = try await MeowProcess.run("sync-service", ["--config", config])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("Unknown option --no-such-option"))
    }

    @Test("a usage mistake exits 64 with a hint")
    func usageMistake() async throws {
        let result = try await MeowProcess.run("store-service", ["--in-memory", "--bogus"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("Unknown option --bogus"))
        let batch = try await MeowProcess.run("store-service", ["--in-memory", "--sync-socket", "/tmp/none.sock", "--sync-credential", "x", "--batch-size", "401"])
        #expect(batch.status == 64)
        #expect(batch.stderr.contains("--batch-size must be a whole number from 1 to 400; got '401'."))
        let environment = try await MeowProcess.run("store-service", ["--in-memory", "--sync-socket", "/tmp/none.sock", "--sync-credential", "x", "--environment", "staging"])
        #expect(environment.status == 64)
        #expect(environment.stderr.contains("--environment must be development or production; got 'staging'."))
        let unmirrored = try await MeowProcess.run("store-service", ["--in-memory", "--environment", "production"])
        #expect(unmirrored.status == 64)
        #expect(unmirrored.stderr.contains("--environment chooses the cloud environment to mirror to: it needs --sync-socket PATH."))
    }
}
