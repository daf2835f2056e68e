import CloudWire
import Foundation
import MeowCareTesting
import MeowWire
import Testing
import TestSupport

/// `assertConverged` on every attribute type of examples/TripLog, thumbnails over 64 bytes sent as
/// assets: each value is compared as the cloud's field type holds it, so an Integer 64 past 2^53
/// and an asset field match exactly, and a one-unit change in any of them is still reported.
@Suite struct AttributeTypeConvergenceTests {
    static let configuration: MeowClusterConfiguration = {
        var configuration = MeowClusterConfiguration(devices: ["O": "owner", "B": "owner"])
        configuration.modelFile = ManyToManyConvergenceTests.tripLog
        configuration.deviceArguments = ["--asset-threshold", "64"]
        return configuration
    }()

    static let (thumbnail, trip, day, photo) = (TripLogSample.thumbnail, TripLogSample.trip, TripLogSample.day, TripLogSample.photo)

    /// One real change in every type (fileSize by 1, one byte of the asset, a millisecond…), by record type.
    static func changes(takenAt: Double) -> [String: [String: JSONValue]] {
        var edited = thumbnail
        edited[edited.count - 1] = 0
        return [
            "CD_Photo": ["CD_fileSize": ["type": "int64", "value": .int(9_007_199_254_740_994)],
                         "CD_thumbnail_ckAsset": ["type": "asset", "value": .string(edited.base64EncodedString())],
                         "CD_takenAt": ["type": "date", "value": .double(takenAt + 0.001)],
                         "CD_sourceURL": ["type": "string", "value": "https://example.com/p/2.heic"],
                         "CD_id": ["type": "string", "value": "1B4E28BA-2FA1-11D2-883F-0016D3CCA428"],
                         "CD_metadata": ["type": "bytes", "value": "YnBsaXN0MDDUAg=="],
                         "CD_rating": ["type": "int64", "value": 4],
                         "CD_latitude": ["type": "double", "value": 34.967147]],
            "CD_Trip": ["CD_budget": ["type": "string", "value": "2500.76"], "CD_isArchived": ["type": "int64", "value": 1]],
            "CD_Day": ["CD_distanceKm": ["type": "double", "value": 12.75], "CD_dayNumber": ["type": "int64", "value": 3]],
        ]
    }

    @Test("Every attribute type converges exactly (an int64 past 2^53, a thumbnail held as an asset); a real change in each is named",
          .meowCluster(AttributeTypeConvergenceTests.configuration))
    func everyTypeIsComparedAsTheCloudHoldsIt() async throws {
        let cluster = try MeowCluster.current
        let o = cluster["O"]
        let trip = try await o.insert("Trip", Self.trip)
        let day = try await o.insert("Day", Self.day.merging(["trip": .string(trip.objectID)]) { $1 })
        _ = try await o.insert("Photo", Self.photo.merging(["day": .string(day.objectID)]) { $1 })
        try await cluster.settle()

        let owner = try await cluster.cloud.user("owner")
        let records = Dictionary(try await owner.zoneChanges(zone: .coreData).changed.map { ($0.recordType, $0) }) { first, _ in first }
        let photo = try #require(records["CD_Photo"])
        #expect(photo.fields["CD_fileSize"] == ["type": "int64", "value": .int(9_007_199_254_740_993)], "sent exactly, as an int64")
        #expect(photo.fields["CD_thumbnail_ckAsset"]?["type"] == "asset", "the thumbnail went as an asset")

        try await cluster.assertConverged()
        let report = try await cluster.convergence()
        #expect(report.devices.map(\.device).sorted() == ["B", "O"])
        for device in report.devices {
            #expect(device.isConverged, "\(device.description)")
            #expect(device.zones.map(\.matching).reduce(0, +) == 3, "\(device.device): trip, day and photo match")
        }

        let takenAt = try #require(photo.fields["CD_takenAt"]?["value"]?.doubleValue)
        let changes = Self.changes(takenAt: takenAt)
        var saves: [CloudRecord] = []
        for (type, fields) in changes {
            var record = try #require(records[type])
            record.fields.merge(fields) { $1 }
            saves.append(record)
        }
        try await owner.modify(saving: saves)
        let after = try await cluster.convergence()
        let onO = try #require(after.devices.first { $0.device == "O" })
        #expect(!onO.isConverged)
        var named: [String: (String?, String?)] = [:]
        for zone in onO.zones {
            for entry in zone.differing {
                for (field, local, cloud) in entry.fields { named["\(entry.item.entity).\(field)"] = (local, cloud) }
            }
        }
        let expected = Set(changes.flatMap { type, fields in
            fields.keys.map { "\(type.dropFirst(3)).\($0.replacingOccurrences(of: "_ckAsset", with: ""))" }
        })
        #expect(Set(named.keys) == expected, "\(onO.description)")
        #expect(named["Photo.CD_fileSize"]?.0 == "9007199254740993" && named["Photo.CD_fileSize"]?.1 == "9007199254740994", "\(onO.description)")
        #expect(!onO.description.contains("_ckAsset"), "\(onO.description)")
    }
}
