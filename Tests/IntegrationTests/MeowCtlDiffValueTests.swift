import Foundation
import MeowWire
import TestSupport
import Testing

/// `meowctl diff` on every attribute type of examples/TripLog, thumbnails over 64 bytes sent as
/// assets: each value is compared as the cloud's field type holds it.
@Suite("meowctl diff on every attribute type")
struct MeowCtlDiffValueTests {
    static let (thumbnail, trip, day, photo) = (TripLogSample.thumbnail, TripLogSample.trip, TripLogSample.day, TripLogSample.photo)

    @Test("An int64 past 2^53 and a thumbnail held as an asset match exactly, as does every other type; a change of one in fileSize, or of one byte of the asset, is named")
    func everyTypeIsComparedAsTheCloudHoldsIt() async throws {
        let deployment = try await TripLogDiffDeployment.start(prefix: "mdv", deviceArguments: ["--asset-threshold", "64"])
        let client = deployment.client
        let context = try await client.call("context.open", [:])["context"] ?? .null
        func insert(_ entity: String, _ values: [String: JSONValue]) async throws -> JSONValue {
            try await client.call("object.insert", ["context": context, "entity": .string(entity), "values": .object(values)])["objectID"] ?? .null
        }
        let trip = try await insert("Trip", Self.trip)
        let day = try await insert("Day", Self.day.merging(["trip": trip]) { $1 })
        _ = try await insert("Photo", Self.photo.merging(["day": day]) { $1 })
        _ = try await client.call("context.save", ["context": context])
        _ = try await client.call("sync.now", [:])

        let run = try await deployment.diff(json: true)
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.json?["identical"] == true)
        #expect(run.json?["zones"]?.arrayValue?.map { $0["matching"]?.intValue ?? 0 }.reduce(0, +) == 3, "trip, day and photo")

        // The cloud's fileSize goes up by one and the asset's last byte changes: diff names both,
        // the asset under its attribute's field.
        var photo = try #require(try await deployment.cloudRecords().first { $0["recordType"] == "CD_Photo" }?.objectValue)
        var fields = try #require(photo["fields"]?.objectValue)
        #expect(fields["CD_fileSize"] == ["type": "int64", "value": .int(9_007_199_254_740_993)], "sent exactly, as an int64")
        #expect(fields["CD_thumbnail_ckAsset"]?["type"] == "asset", "the thumbnail went as an asset")
        var edited = Self.thumbnail
        edited[edited.count - 1] = 0
        fields["CD_fileSize"] = ["type": "int64", "value": .int(9_007_199_254_740_994)]
        fields["CD_thumbnail_ckAsset"] = ["type": "asset", "value": .string(edited.base64EncodedString())]
        photo["fields"] = .object(fields)
        try await deployment.modify(["saves": [.object(photo)]])
        let changed = try await deployment.diff(json: true)
        #expect(changed.status == 1)
        let differing = changed.json?["zones"]?.arrayValue?.flatMap { $0["differing"]?.arrayValue ?? [] } ?? []
        let named = differing.flatMap { $0["fields"]?.arrayValue ?? [] }
        #expect(named.map { $0["field"] ?? .null } == ["CD_fileSize", "CD_thumbnail"], "\(changed.stdout)")
        #expect(named.first?["device"] == "9007199254740993" && named.first?["cloud"] == "9007199254740994", "\(changed.stdout)")
        #expect(named.last?["cloud"] == .string(edited.base64EncodedString()), "\(changed.stdout)")
        let table = try await deployment.diff(json: false)
        #expect(table.stdout.contains("CD_fileSize") && table.stdout.contains("9007199254740994"), "\(table.stdout)")
        await deployment.stop()
    }
}
