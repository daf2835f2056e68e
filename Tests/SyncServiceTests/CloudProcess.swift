import Foundation
import MeowWire
import TestSupport
import class MeowCareCluster.MeowProcess

/// A real sync-service on a short temp socket with the test users (owner, alice, bob), for the
/// suites that talk to it over the wire.
struct CloudProcess {
    static let admin = "admin-secret-for-tests"
    let dir: TemporaryDirectory

    func start(dataDir: Bool = false, extra: [String] = []) async throws -> MeowProcess {
        let users = #"{"users":[{"user":"owner","credential":"owner-secret"},{"user":"alice","credential":"alice-secret"},{"user":"bob","credential":"bob-secret"}]}"#
        try users.write(toFile: dir.file("users.json"), atomically: true, encoding: .utf8)
        let persistence = dataDir ? ["--data-dir", dir.file("data")] : ["--in-memory"]
        return try await MeowProcess.start("sync-service", ["--socket", dir.file("s.sock"), "--admin-credential", Self.admin,
                                                               "--users", dir.file("users.json")] + persistence + extra)
    }

    func connect(_ credential: String?, client name: String) async throws -> WireClient {
        let client = try WireClient(socketPath: dir.file("s.sock"))
        try await client.hello(client: name, credential: credential)
        return client
    }

    /// The wire error `body` throws, nil when it succeeds.
    static func failure(_ body: () async throws -> Void) async -> WireError? {
        do {
            try await body()
            return nil
        } catch let error as WireError {
            return error
        } catch {
            return WireError(.internalError, "\(error)")
        }
    }
}
