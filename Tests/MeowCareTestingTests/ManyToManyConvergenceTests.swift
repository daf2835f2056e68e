import CloudWire
import Foundation
import MeowCareTesting
import MeowWire
import Testing

/// `assertConverged` on an app's own model with many-to-many (examples/TripLog): a device's
/// link rows are compared with the cloud's CDMR records, record by record.
@Suite struct ManyToManyConvergenceTests {
    static let tripLog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/TripLog/TripLog.json").path

    static var twoDevices: MeowClusterConfiguration {
        var configuration = MeowClusterConfiguration(devices: ["A": "owner", "B": "owner"])
        configuration.modelFile = tripLog
        return configuration
    }

    @Test("Links held as CDMR records converge; a link record the cloud lost is reported on the device that has it",
          .meowCluster(ManyToManyConvergenceTests.twoDevices))
    func linksAreComparedAsTheCloudHoldsThem() async throws {
        let cluster = try MeowCluster.current
        let a = cluster["A"], b = cluster["B"]
        let shrine = try await a.insert("Tag", ["name": "shrine"])
        let autumn = try await a.insert("Tag", ["name": "autumn"])
        _ = try await a.insert("Photo", ["caption": "Torii gates", "rating": 5, "tags": [.string(shrine.objectID), .string(autumn.objectID)]])
        try await cluster.settle()
        #expect(try await b.fetch("Photo").first?.values["tags"]?.arrayValue?.count == 2, "B has both links")

        try await cluster.assertConverged()
        let report = try await cluster.convergence()
        for device in report.devices {
            #expect(device.zones.map(\.matching).reduce(0, +) == 5, "\(device.device): three objects and two CDMR links match")
        }

        let owner = try await cluster.cloud.user("owner")
        let records = try await owner.zoneChanges(zone: .coreData).changed
        let links = records.filter { $0.recordType == "CDMR" }
        #expect(links.count == 2)
        #expect(Set(links.compactMap { $0.fields["CD_relationships"]?["value"]?.stringValue }) == ["tags:photos"])
        let lost = try #require(links.first)
        _ = try await owner.modify(deleting: [RecordID(recordName: lost.recordName, zoneID: .coreData)])
        let after = try await cluster.convergence()
        let onA = try #require(after.devices.first { $0.device == "A" })
        #expect(!onA.isConverged)
        #expect(onA.zones.flatMap(\.onlyOnDevice).map(\.name) == [lost.recordName])
        #expect(onA.description.contains("only on the device: CDMR \(lost.recordName)"), "\(onA.description)")
    }
}
