#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
@testable import ServiceRuntime
import Synchronization
import TestSupport
import Testing

extension SocketSuites {
    @Suite("The server's life: start, serve, stop")
    struct ServerLifecycleTests {
        /// Runs `server` on a thread of its own; the task ends when `run()` returns.
        func running(_ server: ServiceServer) -> ThreadResult<String?> {
            ThreadResult { () -> String? in
                do { try server.run(); return nil } catch { return "\(error)" }
            }
        }

        @Test("a stop asked for before run: run binds, returns at once, and removes the socket and its lock file")
        func shutdownBeforeRun() async throws {
            let directory = TemporaryDirectory(prefix: "srs")
            let path = directory.file("s.sock")
            let definition = TestService()
            let server = try ServiceServer(definition: definition, configuration: ServiceConfiguration(socketPath: path, persistence: .inMemory))
            server.shutdown()
            server.shutdown()  // a second call changes nothing
            #expect(await running(server).value() == nil)
            #expect(definition.calls.all == ["start", "stop"])
            #expect(mode(path) == nil)
            #expect(mode(path + ".lock") == nil)
        }

        @Test("a definition that fails to start stops start-up: run throws, binds nothing, and lets go of the data directory")
        func failedStartReleasesTheDataDirectory() async throws {
            let directory = TemporaryDirectory(prefix: "srs")
            let path = directory.file("s.sock")
            let data = directory.file("data")
            var definition = TestService()
            definition.failStart = true
            let server = try ServiceServer(definition: definition, configuration: ServiceConfiguration(socketPath: path, persistence: .dataDirectory(data)))
            let error = await running(server).value()
            #expect(error == "the test service refuses to start")
            #expect(definition.calls.all == ["start"])
            #expect(mode(data) == 0o700)
            #expect(mode("\(data)/\(ServiceServer.dataLockName)") == nil)
            #expect(mode(path) == nil)
        }

        @Test("a running service holds its data directory's lock, tells subscribers shuttingDown on stop, then closes and cleans up")
        func serveThenStop() async throws {
            let directory = TemporaryDirectory(prefix: "srs")
            let path = directory.file("s.sock")
            let data = directory.file("data")
            let definition = TestService()
            let server = try ServiceServer(definition: definition, configuration: ServiceConfiguration(socketPath: path, persistence: .dataDirectory(data)))
            let run = running(server)
            let client = try waitUntilAccepting(path)
            try client.hello()
            #expect(try String(contentsOfFile: "\(data)/\(ServiceServer.dataLockName)", encoding: .utf8) == "\(getpid())\n")
            let subscribed = try client.call(#"{"id":2,"op":"subscribe","params":{"topics":["service"]}}"#)
            #expect(subscribed["result"]?["topics"] == ["service"])
            let info = try client.call(#"{"id":3,"op":"info"}"#)
            #expect(info["result"]?["connections"]?["open"] == 1)
            #expect(info["result"]?["socket"] == ["path": .string(path), "activation": "self-bound"])
            #expect(info["result"]?["persistence"]?["dataDir"] == .string(data))

            server.shutdown()
            let event = try client.next()
            #expect(event["event"] == "shuttingDown")
            #expect(event["seq"] == 1)
            #expect(client.closesWithoutFrame())
            #expect(await run.value() == nil)
            #expect(definition.calls.all == ["start", "stop"])
            #expect(mode(path) == nil)
            #expect(mode(path + ".lock") == nil)
            #expect(mode("\(data)/\(ServiceServer.dataLockName)") == nil)
        }

        @Test("a connection past a limit is refused at accept with tooManyConnections naming the limit",
              arguments: ["total", "perPeer", "pending"])
        func connectionLimits(reason: String) async throws {
            let directory = TemporaryDirectory(prefix: "srs")
            let path = directory.file("s.sock")
            var configuration = ServiceConfiguration(socketPath: path, persistence: .inMemory)
            switch reason {
            case "total": configuration.maxConnections = 1
            case "perPeer": configuration.maxConnectionsPerPeer = 1
            default: configuration.maxPendingConnections = 1
            }
            let server = try ServiceServer(definition: TestService(), configuration: configuration)
            let run = running(server)
            // The first connection takes the one slot (it never says hello); the listener
            // accepts connections in the order they were made.
            let first = try waitUntilAccepting(path)
            let second = try TestClient(path: path)
            let refusal = try second.next()
            #expect(refusal["id"] == .null)
            #expect(refusal["error"]?["code"] == "tooManyConnections")
            #expect(refusal["error"]?["details"]?["reason"] == .string(reason))
            #expect(refusal["error"]?["details"]?["limit"] == 1)
            #expect(second.closesWithoutFrame())
            if reason != "pending" {
                try first.hello()
                let info = try first.call(#"{"id":2,"op":"info"}"#)
                #expect(info["result"]?["connections"]?["refused"] == 1)
                #expect(info["result"]?["connections"]?["accepted"] == 1)
            }
            server.shutdown()
            #expect(await run.value() == nil)
        }

        @Test("SIGTERM reaches the handler through the self-pipe, with its number")
        func shutdownSignalsArrive() async throws {
            let received = SignalReceiver()
            let signalNumber = await withCheckedContinuation { continuation in
                received.wait(continuation)
                ShutdownSignals.install { number in received.deliver(number) }
                raise(SIGTERM)
            }
            // The test process gets its default dispositions back.
            signal(SIGTERM, SIG_DFL)
            signal(SIGINT, SIG_DFL)
            #expect(signalNumber == SIGTERM)
        }
    }
}

/// Hands the first signal number delivered to the one waiting for it.
private final class SignalReceiver: Sendable {
    private let waiting = Mutex<CheckedContinuation<Int32, Never>?>(nil)
    func wait(_ continuation: CheckedContinuation<Int32, Never>) { waiting.withLock { $0 = continuation } }
    func deliver(_ number: Int32) { waiting.withLock { $0?.resume(returning: number); $0 = nil } }
}
