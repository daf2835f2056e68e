import Foundation
import MeowWire
import TestSupport
import Testing

/// `meowctl diff` on every attribute type of examples/TripLog, thumbnails over 64 bytes sent as
/// assets: each value is compared as the cloud's field type holds it.
@Suite("meowctl diff on every attribute type")
struct MeowCtlDiffValueTests {
    // The values of Tests/MirrorTests/TripLogTests.swift.
    static let thumbnail = Data((0..<300).map { UInt8($0 % 256) })
    static let trip: [String: JSONValue] = [
        "id": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "name": "Kyoto in autumn", "startDate": "2026-11-01T00:00:00.000Z",
        "endDate": "2026-11-09T23:59:59.999Z", "budget": "2500.75", "currency": "JPY", "isArchived": false,
    ]
    static let day: [String: JSONValue] = [
        "id": "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "date": "2026-11-02T00:00:00.000Z", "dayNumber": 2, "distanceKm": 12.5,
        "notes": "Fushimi Inari at dawn",
    ]
    static let photo: [String: JSONValue] = [
        "id": "1B4E28BA-2FA1-11D2-883F-0016D3CCA427", "caption": "Torii gates", "takenAt": "2026-11-02T06:12:30.250Z",
        "thumbnail": .string(thumbnail.base64EncodedString()), "sourceURL": "https://example.com/p/1.heic",
        "fileSize": "9007199254740993", "rating": 5, "latitude": 34.967146, "longitude": 135.772695, "metadata": "YnBsaXN0MDDUAQ==",
    ]

    @Test("An int64 past 2^53 and a thumbnail held as an asset match exactly, as does every other type; a change of one in fileSize, or of one byte of the asset, is named")
    func everyTypeIsComparedAsTheCloudHoldsIt() async throws {
        let directory = TemporaryDirectory(prefix: "mdv")
        let users = directory.file("users.json")
        try #"{"users":[{"user":"olivia","credential":"olivia-secret"}]}"#.write(toFile: users, atomically: true, encoding: .utf8)
        let cloudSocket = directory.file("cloud.sock"), deviceSocket = directory.file("a.sock")
        let cloud = try await ServiceProcess.start("sync-service", ["--socket", cloudSocket, "--in-memory", "--users", users])
        let device = try await ServiceProcess.start("store-service", ["--socket", deviceSocket, "--in-memory", "--model", MeowCtlDiffLinkTests.tripLog,
                                                                      "--sync-socket", cloudSocket, "--sync-credential", "olivia-secret",
                                                                      "--device-name", "A", "--asset-threshold", "64"])
        let client = try WireClient(socketPath: deviceSocket)
        try await client.hello(client: "diff-values")
        let context = try await client.call("context.open", [:])["context"] ?? .null
        func insert(_ entity: String, _ values: [String: JSONValue]) async throws -> JSONValue {
            try await client.call("object.insert", ["context": context, "entity": .string(entity), "values": .object(values)])["objectID"] ?? .null
        }
        let trip = try await insert("Trip", Self.trip)
        let day = try await insert("Day", Self.day.merging(["trip": trip]) { $1 })
        _ = try await insert("Photo", Self.photo.merging(["day": day]) { $1 })
        _ = try await client.call("context.save", ["context": context])
        _ = try await client.call("sync.now", [:])

        let target = ["--socket", deviceSocket, "--cloud", cloudSocket, "--credential", "olivia-secret"]
        let run = try await runTool("meowctl", ["diff"] + target + ["--json"])
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(run.stdout.utf8))
        #expect(run.status == 0, "\(run.stdout)")
        #expect(json["identical"] == true)
        #expect(json["zones"]?.arrayValue?.map { $0["matching"]?.intValue ?? 0 }.reduce(0, +) == 3, "trip, day and photo")

        // The cloud's fileSize goes up by one and the asset's last byte changes: diff names both,
        // the asset under its attribute's field.
        let owner = try WireClient(socketPath: cloudSocket)
        try await owner.hello(client: "diff-values", credential: "olivia-secret")
        let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
        let records = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": zone])["changed"]?.arrayValue ?? []
        var photo = try #require(records.first { $0["recordType"] == "CD_Photo" }?.objectValue)
        var fields = try #require(photo["fields"]?.objectValue)
        #expect(fields["CD_fileSize"] == ["type": "int64", "value": .int(9_007_199_254_740_993)], "sent exactly, as an int64")
        #expect(fields["CD_thumbnail_ckAsset"]?["type"] == "asset", "the thumbnail went as an asset")
        var edited = Self.thumbnail
        edited[edited.count - 1] = 0
        fields["CD_fileSize"] = ["type": "int64", "value": .int(9_007_199_254_740_994)]
        fields["CD_thumbnail_ckAsset"] = ["type": "asset", "value": .string(edited.base64EncodedString())]
        photo["fields"] = .object(fields)
        _ = try await owner.call("records.modify", ["database": "private", "saves": [.object(photo)]])
        owner.close()
        let changed = try await runTool("meowctl", ["diff"] + target + ["--json"])
        let changedJSON = try JSONDecoder().decode(JSONValue.self, from: Data(changed.stdout.utf8))
        #expect(changed.status == 1)
        let differing = changedJSON["zones"]?.arrayValue?.flatMap { $0["differing"]?.arrayValue ?? [] } ?? []
        let named = differing.flatMap { $0["fields"]?.arrayValue ?? [] }
        #expect(named.map { $0["field"] ?? .null } == ["CD_fileSize", "CD_thumbnail"], "\(changed.stdout)")
        #expect(named.first?["device"] == "9007199254740993" && named.first?["cloud"] == "9007199254740994", "\(changed.stdout)")
        #expect(named.last?["cloud"] == .string(edited.base64EncodedString()), "\(changed.stdout)")
        let table = try await runTool("meowctl", ["diff"] + target)
        #expect(table.stdout.contains("CD_fileSize") && table.stdout.contains("9007199254740994"), "\(table.stdout)")

        client.close()
        _ = await device.stop()
        _ = await cloud.stop()
    }
}
