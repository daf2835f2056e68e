import Foundation
import MeowWire
import TestSupport
import class MeowCareCluster.MeowProcess

/// A service on a fresh temp socket, stopped with the fixture.
struct RunningService {
    let directory: TemporaryDirectory
    let process: MeowProcess
    let socket: String

    static func start(_ executable: String = "store-service", _ extra: [String] = [],
                      socketName: String = "svc.sock") async throws -> RunningService {
        let directory = TemporaryDirectory()
        let socket = directory.file("run/\(socketName)")
        let process = try await MeowProcess.start(executable, ["--socket", socket, "--in-memory"] + extra)
        return RunningService(directory: directory, process: process, socket: socket)
    }

    func raw() throws -> RawConnection { try RawConnection(path: socket) }

    /// A raw connection that has already said hello.
    func greeted() throws -> RawConnection {
        let connection = try raw()
        let reply = try connection.hello()
        guard reply["ok"] == true else { throw TestFailure("hello failed: \(reply)") }
        return connection
    }

    /// Proves the service still serves others: a new connection's hello and ping succeed.
    func stillServes() throws -> Bool {
        let other = try greeted()
        other.send(["id": 99, "op": "ping"])
        return try other.nextMessage()["ok"] == true
    }
}
