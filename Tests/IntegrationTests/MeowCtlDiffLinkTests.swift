import Foundation
import MeowWire
import TestSupport
import Testing

/// `meowctl diff` on an app's own model with many-to-many (examples/TripLog): a device's link
/// rows against the cloud's CDMR records.
@Suite("meowctl diff with many-to-many")
struct MeowCtlDiffLinkTests {
    static let tripLog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/TripLog/TripLog.json").path

    @Test("A synced photo with two tags is identical to the cloud, its links matching CDMR records by name; a link the cloud lost is only on the device")
    func linksAreComparedAsCDMRRecords() async throws {
        let directory = TemporaryDirectory(prefix: "mdl")
        let users = directory.file("users.json")
        try #"{"users":[{"user":"olivia","credential":"olivia-secret"}]}"#.write(toFile: users, atomically: true, encoding: .utf8)
        let cloudSocket = directory.file("cloud.sock"), deviceSocket = directory.file("a.sock")
        let cloud = try await ServiceProcess.start("sync-service", ["--socket", cloudSocket, "--in-memory", "--users", users])
        let device = try await ServiceProcess.start("store-service", ["--socket", deviceSocket, "--in-memory", "--model", Self.tripLog,
                                                                      "--sync-socket", cloudSocket, "--sync-credential", "olivia-secret",
                                                                      "--device-name", "A"])
        let client = try WireClient(socketPath: deviceSocket)
        try await client.hello(client: "diff-links")
        let context = try await client.call("context.open", [:])["context"] ?? .null
        let tags = try await client.call("object.insert", ["context": context, "objects": [
            ["entity": "Tag", "values": ["name": "shrine"]], ["entity": "Tag", "values": ["name": "autumn"]]]])["objectIDs"] ?? []
        _ = try await client.call("object.insert", ["context": context, "entity": "Photo",
                                                    "values": ["caption": "Torii gates", "rating": 5, "tags": tags]])
        _ = try await client.call("context.save", ["context": context])
        _ = try await client.call("sync.now", [:])

        let target = ["--socket", deviceSocket, "--cloud", cloudSocket, "--credential", "olivia-secret"]
        let run = try await runTool("meowctl", ["diff"] + target + ["--json"])
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(run.stdout.utf8))
        #expect(run.status == 0, "\(run.stdout)")
        #expect(json["identical"] == true)
        #expect(json["zones"]?.arrayValue?.map { $0["matching"]?.intValue ?? 0 }.reduce(0, +) == 5, "three objects and two links")

        // The cloud loses one link record: diff names it, only on the device, as a CDMR record.
        let owner = try WireClient(socketPath: cloudSocket)
        try await owner.hello(client: "diff-links", credential: "olivia-secret")
        let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
        let records = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": zone])["changed"]?.arrayValue ?? []
        let link = try #require(records.first { $0["recordType"] == "CDMR" }?["recordName"])
        _ = try await owner.call("records.modify", ["database": "private", "deletes": [["recordName": link, "zoneID": zone]]])
        owner.close()
        let lost = try await runTool("meowctl", ["diff"] + target + ["--json"])
        let lostJSON = try JSONDecoder().decode(JSONValue.self, from: Data(lost.stdout.utf8))
        #expect(lost.status == 1)
        let onlyOnDevice = lostJSON["zones"]?.arrayValue?.flatMap { $0["onlyOnDevice"]?.arrayValue ?? [] } ?? []
        #expect(onlyOnDevice.map { $0["recordName"] ?? .null } == [link], "\(lost.stdout)")
        #expect(onlyOnDevice.first?["entity"] == "CDMR")
        let table = try await runTool("meowctl", ["diff"] + target)
        #expect(table.stdout.contains("only on the device  CDMR"), "\(table.stdout)")

        client.close()
        _ = await device.stop()
        _ = await cloud.stop()
    }
}
