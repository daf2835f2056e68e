import Foundation
import MeowCareTesting
import Testing

/// `MEOWCARE_EXTERNAL`: a cluster on a running deployment's services. The deployment here is a
/// directory laid out as `deploy/meowcare-local up` writes one, naming a cluster this test started.
@Suite struct ExternalModeTests {
    private func writeDeployment(for running: MeowCluster) throws -> String {
        let directory = running.directory + "/deployment"
        try FileManager.default.createDirectory(atPath: directory + "/config", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/logs", withIntermediateDirectories: true)
        var credentials = running.cloud.credentials
        credentials["admin"] = running.cloud.adminCredential
        try JSONWriter.text(.object(credentials.mapValues { .string($0) })).write(toFile: directory + "/config/credentials.json", atomically: true, encoding: .utf8)
        try "# sync-service\nsocket = \(running.cloud.socketPath)\n".write(toFile: directory + "/config/sync-service.conf", atomically: true, encoding: .utf8)
        for device in running.devices {
            let name = "device-\(device.name.lowercased())"
            try "socket = \(device.socketPath)\nsync-credential = \(running.cloud.credentials[device.user]!)\ndevice-name = \(name)\n"
                .write(toFile: directory + "/config/\(name).conf", atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test(.meowCluster(devices: ["A": "olivia", "P": "pablo"]))
    func anExternalClusterUsesTheDeploymentsServicesAndLeavesThemRunning() async throws {
        let running = try MeowCluster.current
        try await running["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        var configuration = MeowClusterConfiguration(devices: ["A": "olivia", "P": "pablo"])
        configuration.externalDeployment = try writeDeployment(for: running)
        let external = try await MeowCluster.start(configuration)
        #expect(external.isExternal)
        #expect(try await external["A"].fetch("CareSession").map { $0["title"] } == ["Mochi"])
        try await external.settle()
        try await external.assertConverged()
        await external.stop()
        #expect(try await running["A"].isHealthy())
    }

    @Test(.meowCluster(devices: ["A": "olivia"]))
    func anExternalDeviceOfAnotherUserIsRefusedWithTheDeploymentsUsers() async throws {
        var configuration = MeowClusterConfiguration(devices: ["A": "owner"])
        configuration.externalDeployment = try writeDeployment(for: try MeowCluster.current)
        let error = await #expect(throws: MeowCareError.self) { try await MeowCluster.start(configuration) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("is olivia's, but the test asks for owner's") == true)
    }

    static let tripLog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples/TripLog/TripLog.json").path

    @Test(.meowCluster(devices: ["A": "olivia"], model: tripLog))
    func anExternalDeploymentOnAnotherModelServesTestsOfThatModelAndRefusesOthers() async throws {
        let running = try MeowCluster.current
        try await running["A"].insert("Trip", ["name": "Kyoto"])
        let deployment = try writeDeployment(for: running)
        var configuration = MeowClusterConfiguration(devices: ["A": "olivia"])
        configuration.externalDeployment = deployment
        configuration.modelFile = Self.tripLog.replacingOccurrences(of: "TripLog.json", with: "TripLog.xcdatamodeld")
        let external = try await MeowCluster.start(configuration)
        #expect(try await external["A"].fetch("Trip").map { $0["name"] } == ["Kyoto"])
        await external.stop()

        configuration.modelFile = nil
        let error = await #expect(throws: MeowCareError.self) { try await MeowCluster.start(configuration) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("runs the model 'TripLog', but the test's model is 'MeowCare'") == true, "\(error?.message ?? "")")
    }
}
