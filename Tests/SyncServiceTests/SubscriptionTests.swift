import CloudWire
import Foundation
import MeowWire
import TestSupport
import Testing

/// Subscriptions as the cloud's own objects: saved, fetched and deleted per user, database and
/// environment, and a `notification` event naming the subscription when a matching change commits.
@Suite(.timeLimit(.minutes(3))) struct SubscriptionTests {
    let dir = TemporaryDirectory(prefix: "sub")
    static let zone: JSONValue = ["zoneName": "Notes"]

    static func note(_ name: String, value: Double, type: String = "CD_Note") -> JSONValue {
        ["recordName": .string(name), "recordType": .string(type), "zoneID": zone,
         "fields": ["CD_value": ["type": "double", "value": .double(value)], "CD_kind": ["type": "string", "value": "insulin"]]]
    }

    /// The next `count` notification events' (subscriptionID, reason or type) pairs.
    static func next(_ count: Int, _ events: inout AsyncStream<WireEvent>.Iterator) async -> [String] {
        var seen: [String] = []
        while seen.count < count, let event = await events.next() {
            guard event.name == "notification" else { continue }
            let data = event.data
            seen.append("\(data["subscriptionID"]?.stringValue ?? "?") \(data["queryNotificationReason"]?.stringValue ?? data["notificationType"]?.stringValue ?? "?")")
        }
        return seen
    }

    @Test("Subscriptions are saved, replaced, fetched and deleted per database; bad ones are refused by name and change nothing")
    func saveFetchDelete() async throws {
        let service = try await CloudProcess(dir: dir).start()
        let owner = try await CloudProcess(dir: dir).connect("owner-secret", client: "t")
        let saved = try await owner.call("subscriptions.save", ["database": "private", "subscriptions": [
            ["subscriptionID": "all", "subscriptionType": "database", "notificationInfo": ["shouldSendContentAvailable": true]],
            ["subscriptionID": "notes-zone", "subscriptionType": "recordZone", "zoneID": Self.zone],
            ["subscriptionID": "high", "subscriptionType": "query", "recordType": "CD_Note", "predicate": "CD_value > 200", "firesOn": ["recordCreation"]],
        ]])
        #expect(saved["subscriptions"]?.arrayValue?.count == 3)
        // The zone's owner is resolved to the caller; saving an ID again replaces it.
        _ = try await owner.call("subscriptions.save", ["database": "private", "subscriptions": [
            ["subscriptionID": "high", "subscriptionType": "query", "recordType": "CD_Note", "predicate": "CD_value >= 300"]]])
        let fetched = try await owner.call("subscriptions.fetch", ["database": "private"])["subscriptions"]?.arrayValue ?? []
        #expect(fetched.compactMap { $0["subscriptionID"]?.stringValue } == ["all", "high", "notes-zone"])
        #expect(fetched[1]["predicate"] == "CD_value >= 300" && fetched[1]["firesOn"] == nil)
        #expect(fetched[2]["zoneID"]?["ownerName"] == "owner")
        #expect(fetched[0]["notificationInfo"]?["shouldSendContentAvailable"] == true)

        let refusals: [(JSONValue, String, String)] = [
            (["subscriptionID": "x", "subscriptionType": "everything"], "invalidArguments", "unknown subscriptionType 'everything'"),
            (["subscriptionID": "x", "subscriptionType": "query", "recordType": "CD_Note", "predicate": "CD_value >> 2"], "invalidArguments", "Malformed predicate at character 11"),
            (["subscriptionID": "x", "subscriptionType": "query", "recordType": "CD_Note", "predicate": "CD_kind == \"open"], "invalidArguments", "expected a value"),
            (["subscriptionID": "x", "subscriptionType": "recordZone"], "invalidArguments", "needs zoneID"),
            (["subscriptionID": "x", "subscriptionType": "recordZone", "zoneID": ["zoneName": "Notes", "ownerName": "alice"]], "invalidArguments",
             "names one of the caller's own zones"),
            (["subscriptionID": "x", "subscriptionType": "query", "recordType": "CD_Note", "firesOn": ["recordMove"]], "invalidArguments", "firesOn takes"),
        ]
        for (subscription, code, text) in refusals {
            let error = await CloudProcess.failure { _ = try await owner.call("subscriptions.save", ["database": "private", "subscriptions": [
                ["subscriptionID": "ok", "subscriptionType": "database"], subscription]]) }
            #expect(error?.code.rawValue == code)
            #expect(error?.message.contains(text) == true, "\(error?.message ?? "")")
        }
        let shared = await CloudProcess.failure { _ = try await owner.call("subscriptions.save", ["database": "shared", "subscriptions": [
            ["subscriptionID": "z", "subscriptionType": "recordZone", "zoneID": Self.zone]]]) }
        #expect(shared?.message.contains("the shared database takes database subscriptions only") == true)
        let unknown = await CloudProcess.failure { _ = try await owner.call("subscriptions.delete", ["database": "private", "subscriptionIDs": ["all", "nope"]]) }
        #expect(unknown?.code == .unknownItem && unknown?.details["subscriptionIDs"] == ["nope"])
        #expect(try await owner.call("subscriptions.fetch", ["database": "private"])["subscriptions"]?.arrayValue?.count == 3, "nothing was saved or deleted")
        #expect(try await owner.call("subscriptions.delete", ["database": "private", "subscriptionIDs": ["all"]])["deleted"] == ["all"])
        let missing = await CloudProcess.failure { _ = try await owner.call("subscriptions.fetch", ["database": "private", "subscriptionIDs": ["all"]]) }
        #expect(missing?.code == .unknownItem)
        // Another user, and the production environment, have none of them.
        let alice = try await CloudProcess(dir: dir).connect("alice-secret", client: "t")
        #expect(try await alice.call("subscriptions.fetch", ["database": "private"])["subscriptions"] == [])
        let production = try WireClient(socketPath: dir.file("s.sock"))
        try await production.hello(client: "t", credential: "owner-secret", environment: "production")
        #expect(try await production.call("subscriptions.fetch", ["database": "private"])["subscriptions"] == [])
        let staging = try WireClient(socketPath: dir.file("s.sock"))
        let badEnvironment = await CloudProcess.failure { try await staging.hello(client: "t", credential: "owner-secret", environment: "staging") }
        #expect(badEnvironment?.code == .invalidField && badEnvironment?.message.contains("staging") == true, "\(badEnvironment?.message ?? "")")
        for client in [owner, alice, production, staging] { client.close() }
        _ = await service.stop()
    }

    @Test("A subscription's notificationInfo is at most 4096 bytes: a larger one answers limitExceeded and nothing is saved")
    func notificationInfoIsBounded() async throws {
        let service = try await CloudProcess(dir: dir).start()
        let owner = try await CloudProcess(dir: dir).connect("owner-secret", client: "t")
        // {"alertBody":"…"} is 16 bytes around the text.
        func subscription(_ id: String, text: Int) -> JSONValue {
            ["subscriptionID": .string(id), "subscriptionType": "database", "notificationInfo": ["alertBody": .string(String(repeating: "x", count: text))]]
        }
        _ = try await owner.call("subscriptions.save", ["database": "private", "subscriptions": [subscription("edge", text: 4080)]])
        let refused = await CloudProcess.failure { _ = try await owner.call("subscriptions.save", ["database": "private", "subscriptions": [
            ["subscriptionID": "ok", "subscriptionType": "database"], subscription("big", text: 4081)]]) }
        #expect(refused?.code == .limitExceeded && refused?.details["limit"] == 4096 && refused?.details["bytes"] == 4097, "\(String(describing: refused))")
        #expect(refused?.message.contains("Subscription 'big': notificationInfo is 4097 bytes") == true, "\(refused?.message ?? "")")
        let kept = try await owner.call("subscriptions.fetch", ["database": "private"])["subscriptions"]?.arrayValue ?? []
        #expect(kept.compactMap { $0["subscriptionID"]?.stringValue } == ["edge"], "nothing of the refused request was saved")
        owner.close()
        _ = await service.stop()
    }

    @Test("A commit notifies each matching subscription of the user's other connections, in commit order; held pushes are released or dropped")
    func notificationsNameTheirSubscription() async throws {
        let service = try await CloudProcess(dir: dir).start()
        let writer = try await CloudProcess(dir: dir).connect("owner-secret", client: "writer")
        let device = try await CloudProcess(dir: dir).connect("owner-secret", client: "device")
        let admin = try await CloudProcess(dir: dir).connect(CloudProcess.admin, client: "admin")
        _ = try await device.call("subscribe", ["topics": ["notifications"]])
        var events = device.events.makeAsyncIterator()
        _ = try await writer.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]])
        _ = try await writer.call("subscriptions.save", ["database": "private", "subscriptions": [
            ["subscriptionID": "db", "subscriptionType": "database"],
            ["subscriptionID": "high", "subscriptionType": "query", "recordType": "CD_Note", "predicate": "CD_value > 200 AND CD_kind == 'insulin'"],
            ["subscriptionID": "tasks", "subscriptionType": "recordZone", "zoneID": Self.zone, "recordType": "CD_Task"],
        ]])
        _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.note("low", value: 100)]])
        _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.note("high", value: 300)]])
        _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.note("t1", value: 1, type: "CD_Task")]])
        // The low note matched only the database subscription: the next events follow it in commit order.
        #expect(await Self.next(5, &events) == ["db database", "db database", "high recordCreated", "db database", "tasks recordZone"])

        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await writer.call("records.modify", ["database": "private", "deletes": [["recordName": "high", "zoneID": Self.zone]]])
        let dropped = try await admin.call("admin.releasePushes", ["drop": true])
        #expect(dropped["dropped"] == 3, "the delete's databaseChanged push and its two notifications")
        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.note("higher", value: 900)]])
        #expect(try await admin.call("admin.releasePushes", [:])["delivered"] == 3)
        let released = await events.next()
        #expect(released?.data["subscriptionID"] == "db")
        let query = await events.next()
        #expect(query?.data["subscriptionID"] == "high" && query?.data["recordName"] == "higher" && query?.data["zoneID"]?["zoneName"] == "Notes")
        #expect(query?.data["notificationType"] == "query" && query?.data["database"] == "private" && query?.data["recordType"] == "CD_Note")
        for client in [writer, device, admin] { client.close() }
        _ = await service.stop()
    }

    @Test("A participant's shared-database subscription hears of the owner's changes to the shared zone; snapshots carry subscriptions of both environments")
    func sharedDatabaseAndSnapshots() async throws {
        let service = try await CloudProcess(dir: dir).start()
        let owner = try await CloudProcess(dir: dir).connect("owner-secret", client: "t")
        let alice = try await CloudProcess(dir: dir).connect("alice-secret", client: "t")
        let admin = try await CloudProcess(dir: dir).connect(CloudProcess.admin, client: "admin")
        let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.share.S1"]
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [zone]])
        _ = try await owner.call("records.modify", ["database": "private", "saves": [
            ["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "zoneID": zone, "fields": [:]]]])
        _ = try await owner.call("participants.add", ["zoneID": zone, "user": "alice", "permission": "readWrite"])
        _ = try await alice.call("shares.accept", ["zoneID": ["zoneName": "com.apple.coredata.cloudkit.share.S1", "ownerName": "owner"]])
        _ = try await alice.call("subscriptions.save", ["database": "shared", "subscriptions": [
            ["subscriptionID": "com.apple.coredata.cloudkit.shared.subscription", "subscriptionType": "database"]]])
        _ = try await alice.call("subscribe", ["topics": ["notifications"]])
        var events = alice.events.makeAsyncIterator()
        _ = try await owner.call("records.modify", ["database": "private", "saves": [
            ["recordName": "e1", "recordType": "CD_CareEvent", "zoneID": zone, "fields": [:]]]])
        let heard = await events.next()
        #expect(heard?.data["subscriptionID"] == "com.apple.coredata.cloudkit.shared.subscription" && heard?.data["database"] == "shared")

        let production = try WireClient(socketPath: dir.file("s.sock"))
        try await production.hello(client: "t", credential: "owner-secret", environment: "production")
        _ = try await production.call("subscriptions.save", ["database": "private", "subscriptions": [["subscriptionID": "prod", "subscriptionType": "database"]]])
        let snapshot = try await admin.call("admin.exportSnapshot", [:])["snapshot"]
        #expect(snapshot?["tables"]?["subscriptions"]?.arrayValue?.count == 2)
        _ = try await admin.call("admin.reset", ["scope": "all"])
        #expect(try await alice.call("subscriptions.fetch", ["database": "shared"])["subscriptions"] == [], "a reset of everything takes them")
        var broken = snapshot ?? .null
        if case var .object(root) = broken, case var .object(tables) = root["tables"] {
            tables["subscriptions"] = [["development", "alice", "shared", "x", "not json", 0]]
            root["tables"] = .object(tables)
            broken = .object(root)
        }
        let refused = await CloudProcess.failure { _ = try await admin.call("admin.importSnapshot", ["snapshot": broken]) }
        #expect(refused?.code == .invalidArguments && refused?.message.contains("Table subscriptions, row 1") == true, "\(refused?.message ?? "")")
        _ = try await admin.call("admin.importSnapshot", ["snapshot": snapshot ?? .null])
        #expect(try await alice.call("subscriptions.fetch", ["database": "shared"])["subscriptions"]?.arrayValue?.count == 1)
        #expect(try await production.call("subscriptions.fetch", ["database": "private"])["subscriptions"]?.arrayValue?.first?["subscriptionID"] == "prod")
        for client in [owner, alice, admin, production] { client.close() }
        _ = await service.stop()
    }

    @Test("A hierarchy share's participant hears only of changes to records in its share: not of the owner's other writes in the zone")
    func hierarchyParticipantsHearOnlyOfTheirShare() async throws {
        let service = try await CloudProcess(dir: dir).start()
        let owner = try await CloudProcess(dir: dir).connect("owner-secret", client: "t")
        let alice = try await CloudProcess(dir: dir).connect("alice-secret", client: "t")
        let admin = try await CloudProcess(dir: dir).connect(CloudProcess.admin, client: "admin")
        let zone: JSONValue = ["zoneName": "Trips"]
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [zone]])
        _ = try await owner.call("records.modify", ["database": "private", "saves": [
            ["recordName": "trip", "recordType": "CD_Trip", "zoneID": zone, "share": ["recordName": "share-1"], "fields": [:]],
            ["recordName": "share-1", "recordType": "cloudkit.share", "zoneID": zone, "fields": [:]]]])
        _ = try await owner.call("participants.add", ["zoneID": zone, "shareName": "share-1", "user": "alice", "permission": "readOnly"])
        _ = try await alice.call("shares.accept", ["zoneID": ["zoneName": "Trips", "ownerName": "owner"], "shareName": "share-1"])
        _ = try await alice.call("subscriptions.save", ["database": "shared", "subscriptions": [["subscriptionID": "shared", "subscriptionType": "database"]]])
        let start = try await alice.call("changes.fetchDatabase", ["database": "shared"])["token"] ?? .null

        // Pushes held and counted: the owner hears of its own write (databaseChanged), alice of nothing.
        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await owner.call("records.modify", ["database": "private", "saves": [
            ["recordName": "private-note", "recordType": "CD_Note", "zoneID": zone, "fields": [:]]]])
        #expect(try await admin.call("admin.releasePushes", [:])["delivered"] == 1, "only the owner's own push")
        let quiet = try await alice.call("changes.fetchDatabase", ["database": "shared", "since": start])
        #expect(quiet["changedZones"] == [], "\(quiet)")

        // A record in the hierarchy: alice's push and notification too.
        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await owner.call("records.modify", ["database": "private", "saves": [
            ["recordName": "day", "recordType": "CD_Day", "zoneID": zone, "parent": ["recordName": "trip"], "fields": [:]]]])
        #expect(try await admin.call("admin.releasePushes", [:])["delivered"] == 3)
        let heard = try await alice.call("changes.fetchDatabase", ["database": "shared", "since": start])
        #expect(heard["changedZones"]?.arrayValue?.count == 1, "\(heard)")

        // Its deletion too, and a move out of the share; a delete outside is not heard.
        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await owner.call("records.modify", ["database": "private", "deletes": [["recordName": "private-note", "zoneID": zone]]])
        #expect(try await admin.call("admin.releasePushes", [:])["delivered"] == 1)
        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await owner.call("records.modify", ["database": "private", "deletes": [["recordName": "day", "zoneID": zone]]])
        #expect(try await admin.call("admin.releasePushes", [:])["delivered"] == 3)
        for client in [owner, alice, admin] { client.close() }
        _ = await service.stop()
    }
}
