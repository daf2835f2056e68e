import Foundation
import MeowWire
import TestSupport
import Testing

/// `meowctl diff` on an app's own model with many-to-many (examples/TripLog): a device's link
/// rows against the cloud's CDMR records.
@Suite("meowctl diff with many-to-many")
struct MeowCtlDiffLinkTests {
    @Test("A synced photo with two tags is identical to the cloud, its links matching CDMR records by name; a link the cloud lost is only on the device")
    func linksAreComparedAsCDMRRecords() async throws {
        let deployment = try await TripLogDiffDeployment.start(prefix: "mdl")
        let client = deployment.client
        let context = try await client.call("context.open", [:])["context"] ?? .null
        let tags = try await client.call("object.insert", ["context": context, "objects": [
            ["entity": "Tag", "values": ["name": "shrine"]], ["entity": "Tag", "values": ["name": "autumn"]]]])["objectIDs"] ?? []
        _ = try await client.call("object.insert", ["context": context, "entity": "Photo",
                                                    "values": ["caption": "Torii gates", "rating": 5, "tags": tags]])
        _ = try await client.call("context.save", ["context": context])
        _ = try await client.call("sync.now", [:])

        let run = try await deployment.diff(json: true)
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.json?["identical"] == true)
        #expect(run.json?["zones"]?.arrayValue?.map { $0["matching"]?.intValue ?? 0 }.reduce(0, +) == 5, "three objects and two links")

        // The cloud loses one link record: diff names it, only on the device, as a CDMR record.
        let link = try #require(try await deployment.cloudRecords().first { $0["recordType"] == "CDMR" }?["recordName"])
        try await deployment.modify(["deletes": [["recordName": link, "zoneID": TripLogDiffDeployment.zone]]])
        let lost = try await deployment.diff(json: true)
        #expect(lost.status == 1)
        let onlyOnDevice = lost.json?["zones"]?.arrayValue?.flatMap { $0["onlyOnDevice"]?.arrayValue ?? [] } ?? []
        #expect(onlyOnDevice.map { $0["recordName"] ?? .null } == [link], "\(lost.stdout)")
        #expect(onlyOnDevice.first?["entity"] == "CDMR")
        let table = try await deployment.diff(json: false)
        #expect(table.stdout.contains("only on the device  CDMR"), "\(table.stdout)")
        await deployment.stop()
    }
}
