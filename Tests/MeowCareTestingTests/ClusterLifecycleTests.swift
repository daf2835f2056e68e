import Foundation
import MeowCareTesting
import Testing

@Suite struct ClusterLifecycleTests {
    @Test func aClusterStartsAnswersAndStops() async throws {
        let cluster = try await MeowCluster.start(MeowClusterConfiguration(devices: ["A": "olivia", "P": "pablo"]))
        let directory = cluster.directory
        #expect(try await cluster["A"].isHealthy())
        let session = try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        #expect(session.store == "Private")
        let status = try await cluster["A"].sync.status()
        #expect(status.user == nil || status.user == "olivia")
        try await cluster.settle()
        let report = try await cluster.convergence()
        #expect(report.isConverged, "\(report)")
        await cluster.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
