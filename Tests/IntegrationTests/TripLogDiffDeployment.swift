import Foundation
import MeowWire
import Testing
import TestSupport
import MeowCareCluster

/// A cluster of a cloud and one device of olivia's on examples/TripLog, for `meowctl diff`'s
/// tests: a raw client on the device, diff runs against the pair, and olivia's raw view of her
/// Core Data zone.
struct TripLogDiffDeployment {
    static let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
    let cluster: MeowCluster
    let client: WireClient
    var cloudSocket: String { cluster.cloud.socketPath }
    var deviceSocket: String { cluster["A"].socketPath }

    static func start(prefix: String, deviceArguments: [String] = []) async throws -> TripLogDiffDeployment {
        var configuration = MeowClusterConfiguration(devices: ["A": "olivia"])
        configuration.credentials = ["olivia": "olivia-secret"]
        configuration.modelFile = TripLogSample.jsonModel
        configuration.orphanRepair = true
        configuration.deviceArguments = deviceArguments
        configuration.externalDeployment = nil
        let cluster = try await MeowCluster.start(configuration)
        let client = try WireClient(socketPath: cluster["A"].socketPath)
        try await client.hello(client: prefix)
        return TripLogDiffDeployment(cluster: cluster, client: client)
    }

    /// `meowctl diff` of the device against the cloud, with `--json` or as the table.
    func diff(json: Bool) async throws -> (status: Int32, stdout: String, json: JSONValue?) {
        let run = try await MeowProcess.run("meowctl", ["diff", "--socket", deviceSocket, "--cloud", cloudSocket, "--credential", "olivia-secret"]
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
        await cluster.stop()
    }
}
