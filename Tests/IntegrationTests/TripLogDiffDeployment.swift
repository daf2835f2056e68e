import Foundation
import MeowWire
import Testing
import TestSupport

/// A cloud and one device of olivia's on examples/TripLog, for `meowctl diff`'s tests: a client
/// on the device, diff runs against the pair, and olivia's raw view of her Core Data zone.
struct TripLogDiffDeployment {
    static let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
    let directory: TemporaryDirectory
    let cloud: ServiceProcess
    let device: ServiceProcess
    let client: WireClient
    let cloudSocket: String
    let deviceSocket: String

    static func start(prefix: String, deviceArguments: [String] = []) async throws -> TripLogDiffDeployment {
        let directory = TemporaryDirectory(prefix: prefix)
        let users = directory.file("users.json")
        try #"{"users":[{"user":"olivia","credential":"olivia-secret"}]}"#.write(toFile: users, atomically: true, encoding: .utf8)
        let cloudSocket = directory.file("cloud.sock"), deviceSocket = directory.file("a.sock")
        let cloud = try await ServiceProcess.start("sync-service", ["--socket", cloudSocket, "--in-memory", "--users", users])
        let device = try await ServiceProcess.start("store-service", ["--socket", deviceSocket, "--in-memory", "--model", TripLogSample.jsonModel,
                                                                      "--sync-socket", cloudSocket, "--sync-credential", "olivia-secret",
                                                                      "--device-name", "A"] + deviceArguments)
        let client = try WireClient(socketPath: deviceSocket)
        try await client.hello(client: prefix)
        return TripLogDiffDeployment(directory: directory, cloud: cloud, device: device, client: client, cloudSocket: cloudSocket, deviceSocket: deviceSocket)
    }

    /// `meowctl diff` of the device against the cloud, with `--json` or as the table.
    func diff(json: Bool) async throws -> (status: Int32, stdout: String, json: JSONValue?) {
        let run = try await runTool("meowctl", ["diff", "--socket", deviceSocket, "--cloud", cloudSocket, "--credential", "olivia-secret"]
                                    + (json ? ["--json"] : []))
        return (run.status, run.stdout, json ? try JSONDecoder().decode(JSONValue.self, from: Data(run.stdout.utf8)) : nil)
    }

    /// Olivia's records in her Core Data zone, as another client of hers reads them.
    func cloudRecords() async throws -> [JSONValue] {
        try await asOlivia { try await $0.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone])["changed"]?.arrayValue ?? [] }
    }

    /// `records.modify` in olivia's private database from another client of hers.
    func modify(_ params: [String: JSONValue]) async throws {
        _ = try await asOlivia { try await $0.call("records.modify", params.merging(["database": "private"]) { $1 }) }
    }

    private func asOlivia<T>(_ body: (WireClient) async throws -> T) async throws -> T {
        let owner = try WireClient(socketPath: cloudSocket)
        defer { owner.close() }
        try await owner.hello(client: "another client", credential: "olivia-secret")
        return try await body(owner)
    }

    func stop() async {
        client.close()
        _ = await device.stop()
        _ = await cloud.stop()
    }
}
