import Foundation
import MeowCareTesting
import MeowWire
import Testing

/// What the cloud's request log says about shares and writes, as the real services write it:
/// a report's share lifecycle and per-record view are made from these fields alone.
@Suite struct RequestLogFactsTests {
    @Test(.meowCluster(devices: ["A": "olivia", "P": "pablo"]))
    func theRequestLogNamesEachShareChangeAndTheFieldsEachWriteChanged() async throws {
        let cluster = try MeowCluster.current
        let (phone, pablo) = (cluster["A"], cluster["P"])
        let session = try await phone.insert("CareSession", ["id": "mochi", "title": "Mochi"])
        let share = try await phone.share.create(session.objectID, participants: [("pablo", .readWrite)])
        try await pablo.share.accept(zoneName: share.zoneName, ownerName: "olivia")
        try await cluster.settle()
        try await phone.update(session.objectID, ["title": "Mochi (renamed)"])
        try await phone.sync.send()
        _ = try await phone.share.stop(zoneName: share.zoneName)
        try await cluster.settle()

        let entries = try await cluster.cloud.admin.requestLog(limit: 1000)
        let changes = entries.flatMap { entry in (entry["shares"]?.arrayValue ?? []).map { ($0["change"]?.stringValue ?? "", entry) } }
        #expect(changes.map(\.0).contains("created"))
        #expect(changes.map(\.0).contains("stopped"))
        let created = try #require(changes.first { $0.0 == "created" })
        #expect(created.1["user"] == "olivia" && created.1["op"] == "records.modify")

        // Each fact names the share's participants after the change: who could read it when.
        let facts = entries.flatMap { $0["shares"]?.arrayValue ?? [] }
        func participant(_ change: String, _ user: String) -> JSONValue? {
            facts.filter { $0["change"]?.stringValue == change }.flatMap { $0["participants"]?.arrayValue ?? [] }
                .first { $0["user"]?.stringValue == user }
        }
        #expect(participant("created", "olivia") == ["user": "olivia", "role": "owner", "permission": "readWrite", "acceptanceStatus": "accepted"])
        #expect(participant("changed", "pablo")?["acceptanceStatus"] == "pending", "participants.add's fact does not name Pablo pending")
        #expect(participant("accepted", "pablo") == ["user": "pablo", "role": "privateUser", "permission": "readWrite", "acceptanceStatus": "accepted"])
        let stopped = try #require(facts.first { $0["change"] == "stopped" })
        #expect(stopped["participants"] == [], "a stopped share still names participants")

        let okEntries: [JSONValue] = entries.filter { $0["code"] == "ok" }
        let allWrites: [JSONValue] = okEntries.flatMap { (entry: JSONValue) -> [JSONValue] in entry["writes"]?.arrayValue ?? [] }
        let saves = allWrites.filter { (write: JSONValue) -> Bool in write["recordType"] == "CD_CareSession" && write["action"] == "saved" }
        let changed: [[String]] = saves.map { (write: JSONValue) -> [String] in (write["changed"]?.arrayValue ?? []).compactMap { $0.stringValue } }
        // The insert changed every field it set; the rename only the title.
        #expect(changed.first?.contains("CD_id") == true && changed.first?.contains("CD_title") == true)
        #expect(changed.contains { $0.contains("CD_title") && !$0.contains("CD_id") }, "no save that changed the title alone: \(changed)")
        // A write names the share its record is in: the moved session's, in the share's zone.
        let sharedZone = "olivia/\(share.zoneName)"
        #expect(saves.contains { $0["zone"]?.stringValue == sharedZone && $0["share"] != nil }, "no write in the shared zone names its share")
        #expect(saves.filter { $0["zone"]?.stringValue != sharedZone }.allSatisfy { $0["share"] == nil }, "a private write names a share")
    }
}
