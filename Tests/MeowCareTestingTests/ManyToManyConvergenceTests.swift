import CloudWire
import Foundation
import MeowCareTesting
import MeowWire
import Testing
import TestSupport

/// `assertConverged` on an app's own model with many-to-many (examples/TripLog): a device's
/// link rows are compared with the cloud's CDMR records, record by record.
@Suite struct ManyToManyConvergenceTests {
    static let tripLog = TripLogSample.jsonModel

    @Test("Links held as CDMR records converge; a link record the cloud lost is reported on the device that has it",
          .meowCluster(devices: ["A": "owner", "B": "owner"], model: ManyToManyConvergenceTests.tripLog))
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
        let joined = try #require(lost.fields["CD_recordNames"]?["value"]?.stringValue)
        #expect(onA.description.contains("only on the device: CDMR \(lost.recordName) (Photo:Tag \(joined))"), "\(onA.description)")
    }

    @Test("A shared trip's tagged photo: the owner's private store and the participant's shared store both match the cloud, links included",
          .meowCluster(devices: ["O": "owner", "P": "pablo"], model: ManyToManyConvergenceTests.tripLog))
    func sharedLinksConverge() async throws {
        let cluster = try MeowCluster.current
        let owner = cluster["O"], participant = cluster["P"]
        let trip = try await owner.insert("Trip", ["name": "Kyoto"])
        let day = try await owner.insert("Day", ["dayNumber": 1, "trip": .string(trip.objectID)])
        let tag = try await owner.insert("Tag", ["name": "shrine"])
        _ = try await owner.insert("Photo", ["caption": "Torii gates", "rating": 5, "day": .string(day.objectID), "tags": [.string(tag.objectID)]])
        let share = try await owner.share.create(trip.objectID, participants: [("pablo", .readWrite)])
        try await participant.share.accept(zoneName: share.zoneName, ownerName: owner.user)
        try await cluster.settle()
        let photo = try #require(try await participant.fetch("Photo").first)
        #expect(photo.store == "Shared")
        #expect(photo.values["tags"]?.arrayValue?.count == 1, "the participant sees the tag")

        try await cluster.assertConverged()
        let report = try await cluster.convergence()
        let shared = report.devices.first { $0.device == "P" }?.zones.filter { $0.database == "shared" } ?? []
        #expect(shared.map(\.matching).reduce(0, +) == 5, "trip, day, photo, tag and the CDMR link in the shared database")
    }
}
