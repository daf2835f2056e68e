import CloudWire
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Attacks on the real `sync-service` over its socket: pages that outgrow a frame, change tags
/// that name other versions, field values the cloud cannot hold exactly.
@Suite(.timeLimit(.minutes(5))) struct CloudHardeningTests {
    let dir = TemporaryDirectory(prefix: "ch")
    static let admin = CloudProcess.admin
    static let zone: JSONValue = ["zoneName": "Zone"]
    static let ownerZone: JSONValue = ["zoneName": "Zone", "ownerName": "owner"]

    func start() async throws -> MeowProcess { try await CloudProcess(dir: dir).start() }

    func connect(_ credential: String) async throws -> WireClient {
        try await CloudProcess(dir: dir).connect(credential, client: "hardening-tests")
    }

    func failure(_ body: () async throws -> Void) async -> WireError? { await CloudProcess.failure(body) }

    static func record(_ name: String, zone: JSONValue = zone, note: String, tag: String? = nil) -> JSONValue {
        var record: [String: JSONValue] = ["recordName": .string(name), "zoneID": zone, "recordType": "CD_CareEvent",
                                           "fields": ["CD_note": ["type": "string", "value": .string(note)]]]
        if let tag { record["recordChangeTag"] = .string(tag) }
        return .object(record)
    }

    /// Every page of the zone's changes from nil (the client's default 16 MiB frame limit).
    static func pages(_ client: WireClient, database: String = "private", zone: JSONValue = zone) async throws -> [JSONValue] {
        var pages: [JSONValue] = []
        var token: JSONValue = .null
        while true {
            let page = try await client.call("changes.fetchZone", ["database": .string(database), "zoneID": zone, "since": token, "limit": 1000])
            pages.append(page)
            token = page["token"] ?? .null
            if page["moreComing"] != true { return pages }
        }
    }

    // MARK: Pages bounded by bytes

    /// Twenty records of 0.9 MB are 18 MB: as one page they were a frame over the 16 MiB limit,
    /// and every fetch of the zone failed with frameTooLarge. Pages now stop at 8 MiB of
    /// records; a record larger than that travels alone; records.fetch answers what fits.
    @Test func aZoneOfLargeRecordsFetchesInPagesUnderTheFrameLimit() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]])
        let large = String(repeating: "m", count: 900_000)
        let names = (0..<20).map { "large-\($0)" }
        for pair in stride(from: 0, to: names.count, by: 2) {
            _ = try await owner.call("records.modify", ["database": "private", "reply": "tags",
                                                        "saves": [Self.record(names[pair], note: large), Self.record(names[pair + 1], note: large)]])
        }
        let pages = try await Self.pages(owner)
        let fetched = pages.flatMap { $0["changed"]?.arrayValue ?? [] }
        #expect(fetched.compactMap { $0["recordName"]?.stringValue } == names)
        #expect(fetched.allSatisfy { $0["fields"]?["CD_note"]?["value"]?.stringValue?.utf8.count == 900_000 })
        #expect(pages.count >= 3)
        #expect(pages.allSatisfy { ($0["changed"]?.arrayValue?.count ?? 0) <= 9 })

        // One record over the budget (the limits raised for it) still travels, alone in its page.
        _ = try await connect(Self.admin).call("admin.setLimits", ["maxRecordBytes": 9_500_000, "maxRequestBytes": 9_500_000])
        _ = try await owner.call("records.modify", ["database": "private", "reply": "tags",
                                                    "saves": [Self.record("huge", note: String(repeating: "h", count: 9_000_000))]])
        let again = try await Self.pages(owner)
        let hugePage = try #require(again.first { page in page["changed"]?.arrayValue?.contains { $0["recordName"] == "huge" } == true })
        #expect(hugePage["changed"]?.arrayValue?.count == 1)
        #expect(again.flatMap { $0["changed"]?.arrayValue ?? [] }.count == 21)

        // records.fetch of all of them: the ones that fit, the rest limitExceeded to ask again.
        let ids: [JSONValue] = (names + ["huge"]).map { ["recordName": .string($0), "zoneID": Self.zone] }
        let partial = await failure { _ = try await owner.call("records.fetch", ["database": "private", "recordIDs": .array(ids)]) }
        #expect(partial?.code == .partialFailure)
        let returned = partial?.details["records"]?.arrayValue?.count ?? 0
        let refused = partial?.details["partialErrors"]?.objectValue ?? [:]
        #expect(returned >= 1 && returned <= 9)
        #expect(returned + refused.count == 21)
        #expect(refused.values.allSatisfy { $0["code"] == "limitExceeded" })
        owner.close()
        #expect(await service.stop() == 0)
    }

    /// A batch of stale saves of records another client grew to 0.9 MB each: every item's
    /// serverRecordChanged carried the server's record, 18 MB in one reply, and every retry of
    /// the batch failed with frameTooLarge. Records that do not fit the page budget are left out
    /// of their items (`recordsOmitted`); sent again, those items get them.
    @Test func conflictsOverLargeRecordsAnswerUnderTheFrameLimit() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]])
        let names = (0..<20).map { "r\($0)" }
        let saved = try await owner.call("records.modify", ["database": "private", "reply": "tags", "saves": .array(names.map { Self.record($0, note: "small") })])
        let tags = Dictionary(uniqueKeysWithValues: (saved["saved"]?.arrayValue ?? []).compactMap { item -> (String, String)? in
            guard let name = item["recordName"]?.stringValue, let tag = item["recordChangeTag"]?.stringValue else { return nil }
            return (name, tag)
        })
        let large = String(repeating: "g", count: 900_000)
        for pair in stride(from: 0, to: names.count, by: 2) {
            _ = try await owner.call("records.modify", ["database": "private", "reply": "tags", "saves": .array(names[pair...(pair + 1)].map {
                Self.record($0, note: large, tag: tags[$0])
            })])
        }
        var waiting = Set(names)
        var rounds = 0
        while !waiting.isEmpty, rounds < 5 {
            rounds += 1
            let error = await failure {
                _ = try await owner.call("records.modify", ["database": "private", "atomic": false,
                                                            "saves": .array(waiting.sorted().map { Self.record($0, note: "stale edit", tag: tags[$0]) })])
            }
            let items = try #require(error?.details["partialErrors"]?.objectValue, "\(String(describing: error))")
            #expect(items.count == waiting.count)
            for (name, item) in items {
                #expect(item["code"] == "serverRecordChanged")
                if item["details"]?["serverRecord"]?["fields"]?["CD_note"]?["value"]?.stringValue?.utf8.count == 900_000 {
                    waiting.remove(name)
                } else {
                    #expect(item["details"]?["recordsOmitted"] == true)
                }
            }
        }
        #expect(waiting.isEmpty)
        #expect(rounds >= 3)
        owner.close()
        #expect(await service.stop() == 0)
    }

    // MARK: Change tags

    /// Tags were the cloud's write sequence in base 36: a participant saving with each small
    /// number's tag got back, as `ancestorRecord`, the record's versions from before it was
    /// shared. Tags are now 128 random bits, and an ancestor is returned only when the caller
    /// could have read that version.
    @Test func aParticipantGuessingTagsGetsNoVersionFromBeforeTheShare() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]])
        let first = try await owner.call("records.modify", ["database": "private", "saves": [Self.record("a", note: "private: before sharing")]])
        let privateTag = try #require(first["saved"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
        let second = try await owner.call("records.modify", ["database": "private", "saves": [Self.record("a", note: "shared", tag: privateTag)]])
        let sharedTag = try #require(second["saved"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
        _ = try await owner.call("records.modify", ["database": "private", "saves": [
            ["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "zoneID": Self.zone, "fields": [:]]]])
        _ = try await owner.call("participants.add", ["zoneID": Self.zone, "user": "alice", "permission": "readWrite"])
        let alice = try await connect("alice-secret")
        _ = try await alice.call("shares.accept", ["zoneID": Self.ownerZone])

        // Opaque: 26 base-36 digits, nothing like a sequence.
        for tag in [privateTag, sharedTag] {
            #expect(tag.count == 26 && tag.allSatisfy { $0.isNumber || ("a"..."z").contains($0) }, "\(tag)")
        }

        func ancestor(_ client: WireClient, database: String, zone: JSONValue, tag: String) async -> JSONValue? {
            let error = await failure {
                _ = try await client.call("records.modify", ["database": .string(database), "saves": [Self.record("a", zone: zone, note: "guess", tag: tag)]])
            }
            let item = error?.details["partialErrors"]?["a"]
            #expect(item?["code"] == "serverRecordChanged", "\(tag): \(String(describing: error))")
            return item?["details"]?["ancestorRecord"]
        }
        // Every tag the old scheme could have given the first hundreds of writes.
        for sequence in 1...300 {
            let leaked = await ancestor(alice, database: "shared", zone: Self.ownerZone, tag: String(sequence, radix: 36))
            #expect(leaked == .null, "tag \(String(sequence, radix: 36)) brought back \(String(describing: leaked))")
        }
        // Even the true tag of the version from before the share brings nothing back to her,
        // while the owner, whose history it is, gets it.
        #expect(await ancestor(alice, database: "shared", zone: Self.ownerZone, tag: privateTag) == .null)
        #expect(await ancestor(owner, database: "private", zone: Self.zone, tag: privateTag)?["fields"]?["CD_note"]?["value"] == "private: before sharing")

        // A version she could read (current when she joined) is her merge's ancestor as before.
        _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.record("a", note: "edited after joining", tag: sharedTag)]])
        #expect(await ancestor(alice, database: "shared", zone: Self.ownerZone, tag: sharedTag)?["fields"]?["CD_note"]?["value"] == "shared")
        for client in [owner, alice] { client.close() }
        #expect(await service.stop() == 0)
    }

    // MARK: Field values

    /// Sends one records.modify written as raw text (numbers exactly as written) and returns the
    /// item's error, or nil when it saved.
    static func rawSave(_ connection: RawConnection, id: Int, name: String, field: String) throws -> JSONValue? {
        connection.send(json: #"{"id":\#(id),"op":"records.modify","params":{"database":"private","saves":[{"recordName":"\#(name)","zoneID":{"zoneName":"Zone"},"recordType":"Values","fields":{\#(field)}}]}}"#)
        let reply = try connection.nextMessage()
        if reply["ok"] == true { return nil }
        return reply["error"]?["details"]?["partialErrors"]?[name] ?? reply["error"]
    }

    /// Values the cloud used to store as something else (or accept though it cannot hold them)
    /// are refused with invalidArguments naming the field; the edges of each range are kept exactly.
    @Test func fieldValuesOutsideWhatTheCloudHoldsAreRefusedByName() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]])
        let raw = try RawConnection(path: dir.file("s.sock"))
        try raw.hello(credential: "owner-secret")
        let refused: [(field: String, text: String)] = [
            ("CD_blob", #""CD_blob":{"type":"bytes","value":"not base64!"}"#),
            ("CD_blob", #""CD_blob":{"type":"bytes","value":"AAE"}"#),
            ("CD_count", #""CD_count":{"type":"int64","value":-9223372036854775809}"#),
            ("CD_count", #""CD_count":{"type":"int64","value":9223372036854775808}"#),
            ("CD_when", #""CD_when":{"type":"date","value":1e300}"#),
            ("CD_when", #""CD_when":{"type":"date","value":253402300800}"#),
            ("CD_when", #""CD_when":{"type":"date","value":-62135596801}"#),
            ("CD_list", #""CD_list":{"type":"list","value":[{"type":"date","value":1e300}]}"#),
        ]
        for (index, item) in refused.enumerated() {
            let error = try Self.rawSave(raw, id: index + 1, name: "v\(index)", field: item.text)
            #expect(error?["code"] == "invalidArguments", "\(item.text): \(String(describing: error))")
            #expect(error?["details"]?["field"] == .string(item.field), "\(item.text)")
            #expect(error?["message"]?.stringValue?.contains(item.field) == true, "\(item.text)")
        }
        // The same refusals for fields in the stored form a sync engine sends (read from the
        // request's bytes without a tree).
        let stored = await failure {
            _ = try await owner.call("records.modify", ["database": "private", "saves": [
                ["recordName": "s1", "zoneID": Self.zone, "recordType": "Values", "fields": ["CD_blob": ["type": "bytes", "value": "%%%%"]]]]])
        }
        #expect(stored?.details["partialErrors"]?["s1"]?["code"] == "invalidArguments")
        #expect(stored?.details["partialErrors"]?["s1"]?["details"]?["field"] == "CD_blob")

        // The edges themselves are stored and come back exactly.
        let kept = #""CD_blob":{"type":"bytes","value":"AAECAw=="},"CD_count":{"type":"int64","value":-9223372036854775808},"CD_max":{"type":"int64","value":9223372036854775807},"CD_first":{"type":"date","value":-62135596800},"CD_last":{"type":"date","value":253402300799.999},"CD_zero":{"type":"double","value":0},"CD_minusZero":{"type":"double","value":-0.0},"CD_epoch":{"type":"date","value":-0.0}"#
        #expect(try Self.rawSave(raw, id: 100, name: "edges", field: kept) == nil)
        let back = try await owner.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "edges", "zoneID": Self.zone]]])
        let fields = back["records"]?.arrayValue?.first?["fields"]
        #expect(fields?["CD_blob"]?["value"] == "AAECAw==")
        #expect(fields?["CD_count"]?["value"] == .int(Int.min))
        #expect(fields?["CD_max"]?["value"] == .int(Int.max))
        #expect(fields?["CD_first"]?["value"]?.doubleValue == -62_135_596_800)
        #expect(fields?["CD_last"]?["value"]?.doubleValue == 253_402_300_799.999)
        // A negative zero is accepted in a double and in a date, and kept as 0 (a whole number).
        #expect(fields?["CD_minusZero"]?["value"] == .int(0), "\(String(describing: fields))")
        #expect(fields?["CD_epoch"]?["value"] == .int(0), "\(String(describing: fields))")
        owner.close()
        #expect(await service.stop() == 0)
    }
}
