import CloudWire
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Large records.modify replies over the wire from the real `sync-service` on a file database:
/// a reply of many records is written beside the request's commit (on the service's side
/// thread, or by the request itself when that thread is busy), and says what was committed.
@Suite(.timeLimit(.minutes(3))) struct ModifyReplyProcessTests {
    let dir = TemporaryDirectory(prefix: "mr")
    static let zone: JSONValue = ["zoneName": "Zone"]

    static func events(_ prefix: String, count: Int) -> [JSONValue] {
        (0..<count).map { index in
            ["recordName": .string("\(prefix)\(index)"), "zoneID": zone, "recordType": "CD_CareEvent",
             "fields": ["CD_value": ["type": "double", "value": .double(Double(index) + 0.5)],
                        "CD_note": ["type": "string", "value": .string("note \(index)")]]]
        }
    }

    /// Each reply form of a 200-record save: the names in request order, each with the change
    /// tag the cloud stored (read back with records.fetch), fields only in the full form.
    @Test func largeRepliesInEachFormSayWhatWasCommitted() async throws {
        let service = try await CloudProcess(dir: dir).start(dataDir: true)
        let owner = try await CloudProcess(dir: dir).connect("owner-secret", client: "modify-reply-tests")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        let forms: [(prefix: String, options: [String: JSONValue], keys: [String]?)] = [
            ("full", [:], nil),
            ("bare", ["returnFields": false], nil),
            ("tags", ["reply": "tags"], ["recordChangeTag", "recordName"]),
        ]
        for form in forms {
            let saves = Self.events(form.prefix, count: 200)
            var params: [String: JSONValue] = ["database": "private", "saves": .array(saves)]
            params.merge(form.options) { _, option in option }
            let reply = try await owner.call("records.modify", JSONValue.object(params))
            let saved = try #require(reply["saved"]?.arrayValue)
            #expect(saved.map { $0["recordName"] } == saves.map { $0["recordName"] }, "\(form.prefix)")
            #expect(reply["deleted"] == [])
            let fetched = try await owner.call("records.fetch", ["database": "private", "recordIDs": .array(saves.map {
                ["recordName": $0["recordName"]!, "zoneID": Self.zone]
            })] as JSONValue)
            let stored = try #require(fetched["records"]?.arrayValue)
            #expect(saved.map { $0["recordChangeTag"] } == stored.map { $0["recordChangeTag"] }, "\(form.prefix): the tags committed")
            #expect(stored.map { $0["fields"] } == saves.map { $0["fields"] }, "\(form.prefix): the fields stored as sent")
            if let keys = form.keys {
                #expect(saved.allSatisfy { $0.objectValue?.keys.sorted() == keys }, "\(form.prefix)")
            } else if form.options.isEmpty {
                #expect(saved.map { $0["fields"] } == saves.map { $0["fields"] })
            } else {
                #expect(saved.allSatisfy { $0["fields"] == nil && $0["recordType"] == "CD_CareEvent" && $0["creationDate"] != nil }, "\(form.prefix)")
            }
        }
        owner.close()
        #expect(await service.stop() == 0)
    }

    /// Two users saving 300-record batches at once, so one request may find the side thread
    /// busy and write its own reply: every reply names its own records with their stored tags.
    @Test func concurrentLargeModifiesEachGetTheirOwnReply() async throws {
        let service = try await CloudProcess(dir: dir).start(dataDir: true)
        var clients: [(user: String, client: WireClient)] = []
        for user in ["owner", "alice"] {
            let client = try await CloudProcess(dir: dir).connect("\(user)-secret", client: "modify-reply-tests")
            _ = try await client.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
            clients.append((user, client))
        }
        let replies = try await withThrowingTaskGroup(of: (String, [[JSONValue?]]).self) { group in
            for (user, client) in clients {
                group.addTask {
                    var batches: [[JSONValue?]] = []
                    for round in 0..<5 {
                        let saves = Self.events("\(user)-\(round)-", count: 300)
                        let reply = try await client.call("records.modify", ["database": "private", "returnFields": false, "saves": .array(saves)] as JSONValue)
                        #expect(reply["saved"]?.arrayValue?.map { $0["recordName"] } == saves.map { $0["recordName"] })
                        batches.append(reply["saved"]?.arrayValue?.map { $0["recordChangeTag"] } ?? [])
                    }
                    return (user, batches)
                }
            }
            var all: [String: [[JSONValue?]]] = [:]
            for try await (user, batches) in group { all[user] = batches }
            return all
        }
        for (user, client) in clients {
            let fetched = try await client.call("records.fetch", ["database": "private", "recordIDs": .array((0..<5).flatMap { round in
                Self.events("\(user)-\(round)-", count: 300).map { ["recordName": $0["recordName"]!, "zoneID": Self.zone] as JSONValue }
            })] as JSONValue)
            let stored = fetched["records"]?.arrayValue?.map { $0["recordChangeTag"] }
            #expect(replies[user]?.flatMap { $0 } == stored, "\(user): every reply's tags are the committed ones")
            client.close()
        }
        #expect(await service.stop() == 0)
    }
}
