import CloudWire
import Foundation
import MeowWire
import SyncServiceKit
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// The real `sync-service` binary over its socket: one test per group of rules.
@Suite(.timeLimit(.minutes(3))) struct SyncServiceProcessTests {
    let dir = TemporaryDirectory(prefix: "sy")
    static let admin = CloudProcess.admin

    func start(dataDir: Bool = false, extra: [String] = []) async throws -> MeowProcess {
        try await CloudProcess(dir: dir).start(dataDir: dataDir, extra: extra)
    }

    func connect(_ credential: String?) async throws -> WireClient {
        try await CloudProcess(dir: dir).connect(credential, client: "sync-tests")
    }

    func failure(_ body: () async throws -> Void) async -> WireError? { await CloudProcess.failure(body) }

    static let zone: JSONValue = ["zoneName": "Zone"]
    static let ownerZone: JSONValue = ["zoneName": "Zone", "ownerName": "owner"]

    static func event(_ name: String, zone: JSONValue = SyncServiceProcessTests.zone, tag: String? = nil, parent: String? = nil,
                      title: String = "note") -> JSONValue {
        var record: [String: JSONValue] = ["recordName": .string(name), "zoneID": zone, "recordType": "CD_CareEvent",
                                           "fields": ["CD_title": ["type": "string", "value": .string(title)]]]
        if let tag { record["recordChangeTag"] = .string(tag) }
        if let parent { record["parent"] = ["recordName": .string(parent)] }
        return .object(record)
    }

    @Test func credentialsAccountStatusAndAdminAccess() async throws {
        let service = try await start()
        let anonymous = try await connect(nil)
        _ = try await anonymous.call("ping", Empty())
        let anonymousError = await failure { _ = try await anonymous.call("zones.fetch", ["database": "private"] as JSONValue) }
        #expect(anonymousError?.code == .notAuthenticated)
        #expect(anonymousError?.details["ckErrorCode"] == 9)

        let bad = try WireClient(socketPath: dir.file("s.sock"))
        #expect(await failure { try await bad.hello(client: "t", credential: "wrong") }?.code == .notAuthenticated)

        let alice = try await connect("alice-secret")
        #expect(await failure { _ = try await alice.call("admin.listUsers", Empty()) }?.code == .permissionFailure)

        let admin = try await connect(Self.admin)
        #expect(await failure { _ = try await admin.call("zones.fetch", ["database": "private"] as JSONValue) }?.code == .permissionFailure)
        _ = try await admin.call("admin.createUser", ["user": "dave", "credential": "dave-secret"] as JSONValue)
        let dave = try await connect("dave-secret")
        let zones = try await dave.call("zones.fetch", ["database": "private"] as JSONValue)
        #expect(zones["zones"]?.arrayValue?.first?["zoneID"]?["zoneName"] == "_defaultZone")

        _ = try await admin.call("admin.setAccountStatus", ["user": "dave", "status": "noAccount"] as JSONValue)
        #expect(await failure { _ = try await dave.call("zones.fetch", ["database": "private"] as JSONValue) }?.code == .notAuthenticated)
        _ = try await admin.call("admin.setAccountStatus", ["user": "dave", "status": "temporarilyUnavailable"] as JSONValue)
        let unavailable = await failure { _ = try await dave.call("zones.fetch", ["database": "private"] as JSONValue) }
        #expect(unavailable?.code == .accountTemporarilyUnavailable)
        #expect(unavailable?.details["ckErrorCode"] == 36)
        for client in [anonymous, bad, alice, admin, dave] { client.close() }
        #expect(await service.stop() == 0)
    }

    /// What the cloud leaves out: no queries or assets (no such ops), no public database, no
    /// record-type schema (any type and field name is stored and returned as sent).
    @Test func noQueriesNoPublicDatabaseNoSchema() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        for op in ["records.query", "assets.upload"] {
            #expect(await failure { _ = try await owner.call(op, ["database": "private"] as JSONValue) }?.code == .unknownOp, "\(op)")
        }
        let publicDatabase = await failure { _ = try await owner.call("changes.fetchDatabase", ["database": "public"] as JSONValue) }
        #expect(publicDatabase?.code == .invalidField)
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        let record: JSONValue = ["recordName": "w1", "zoneID": Self.zone, "recordType": "Whisker",
                                 "fields": ["length_mm": ["type": "int64", "value": 61], "Colour": ["type": "string", "value": "grey"]]]
        let saved = try await owner.call("records.modify", ["database": "private", "saves": [record]] as JSONValue)
        let back = try #require(saved["saved"]?.arrayValue?.first)
        #expect(back["recordType"] == "Whisker")
        #expect(back["fields"]?["length_mm"]?["value"] == 61)
        #expect(back["fields"]?["Colour"]?["value"] == "grey")
        owner.close()
        #expect(await service.stop() == 0)
    }

    @Test func recordsDecisionTableOverTheWire() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        let saved = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("a", title: "base")]] as JSONValue)
        let tag = try #require(saved["saved"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
        _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("a", tag: tag, title: "server")]] as JSONValue)
        let conflict = await failure {
            _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("a", tag: tag, title: "client"), Self.event("b")]] as JSONValue)
        }
        #expect(conflict?.code == .partialFailure)
        #expect(conflict?.details["ckErrorCode"] == 2)
        let items = conflict?.details["partialErrors"]
        #expect(items?["a"]?["code"] == "serverRecordChanged")
        #expect(items?["a"]?["details"]?["ancestorRecord"]?["fields"]?["CD_title"]?["value"] == "base")
        #expect(items?["b"]?["code"] == "batchRequestFailed")

        let admin = try await connect(Self.admin)
        _ = try await admin.call("admin.setLimits", ["maxItemsPerRequest": 2] as JSONValue)
        let tooMany = await failure {
            _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("x"), Self.event("y"), Self.event("z")]] as JSONValue)
        }
        #expect(tooMany?.code == .limitExceeded)

        let alice = try await connect("alice-secret")
        let refused = await failure {
            _ = try await alice.call("records.modify", ["database": "shared", "saves": [Self.event("e", zone: ["zoneName": "com.apple.coredata.cloudkit.zone"])]] as JSONValue)
        }
        #expect(refused?.details["partialErrors"]?["e"]?["message"]?.stringValue?.contains(
            "Illegal attempt to work with the core-data or default zone in the shared database") == true)
        for client in [owner, admin, alice] { client.close() }
        #expect(await service.stop() == 0)
    }

    @Test func sharingLifecycleAcrossThreeUsersWithPermissionReasonsInTheRequestLog() async throws {
        let service = try await start(extra: ["--request-log", dir.file("requests.jsonl")])
        let owner = try await connect("owner-secret")
        let alice = try await connect("alice-secret")
        let bob = try await connect("bob-secret")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        let share: JSONValue = ["recordName": "share-1", "zoneID": Self.zone, "recordType": "cloudkit.share"]
        var root = Self.event("session")
        if case var .object(fields) = root { fields["share"] = ["recordName": "share-1"]; root = .object(fields) }
        _ = try await owner.call("records.modify", ["database": "private", "saves": [root, share]] as JSONValue)
        for (user, permission) in [("alice", "readWrite"), ("bob", "readOnly")] {
            _ = try await owner.call("participants.add", ["zoneID": Self.zone, "shareName": "share-1", "user": .string(user), "permission": .string(permission)] as JSONValue)
        }
        let invitations = try await alice.call("shares.invitations", Empty())
        #expect(invitations["invitations"]?.arrayValue?.first?["acceptanceStatus"] == "pending")
        _ = try await alice.call("shares.accept", ["zoneID": Self.ownerZone, "shareName": "share-1"] as JSONValue)
        _ = try await bob.call("shares.accept", ["zoneID": Self.ownerZone, "shareName": "share-1"] as JSONValue)

        let aliceZones = try await alice.call("changes.fetchDatabase", ["database": "shared"] as JSONValue)
        #expect(aliceZones["changedZones"] == [Self.ownerZone])
        _ = try await alice.call("records.modify", ["database": "shared", "saves": [Self.event("e1", zone: Self.ownerZone, parent: "session")]] as JSONValue)
        let bobWrite = await failure {
            _ = try await bob.call("records.modify", ["database": "shared", "saves": [Self.event("e2", zone: Self.ownerZone, parent: "session")]] as JSONValue)
        }
        #expect(bobWrite?.details["partialErrors"]?["e2"]?["code"] == "permissionFailure")
        let bobView = try await bob.call("changes.fetchZone", ["database": "shared", "zoneID": Self.ownerZone] as JSONValue)
        #expect(Set(bobView["changed"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []) == ["session", "share-1", "e1"])
        let ownerView = try await owner.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "e1", "zoneID": Self.zone]]] as JSONValue)
        #expect(ownerView["records"]?.arrayValue?.first?["lastModifiedUserRecordName"] == "alice")

        _ = try await owner.call("participants.remove", ["zoneID": Self.zone, "shareName": "share-1", "user": "alice"] as JSONValue)
        let aliceAfter = try await alice.call("changes.fetchDatabase", ["database": "shared", "since": aliceZones["token"] ?? .null] as JSONValue)
        #expect(aliceAfter["deletedZones"] == [Self.ownerZone])
        let removedWrite = await failure {
            _ = try await alice.call("records.modify", ["database": "shared", "saves": [Self.event("e3", zone: Self.ownerZone, parent: "session")]] as JSONValue)
        }
        #expect(removedWrite?.details["partialErrors"]?["e3"]?["code"] == "permissionFailure")

        let admin = try await connect(Self.admin)
        let log = try await admin.call("admin.requestLog", Empty())
        let entries: [JSONValue] = log["entries"]?.arrayValue ?? []
        var reasons: [String] = []
        for entry in entries {
            for decision in entry["permissions"]?.arrayValue ?? [] where decision["decision"] == "denied" {
                reasons.append(decision["reason"]?.stringValue ?? "")
            }
        }
        #expect(reasons.contains("participant of share share-1 has permission readOnly"))
        #expect(reasons.contains("alice's participation is removed"))
        let bobEntry = log["entries"]?.arrayValue?.first { $0["user"] == "bob" && $0["op"] == "records.modify" }
        #expect(bobEntry?["code"] == "partialFailure")
        #expect(bobEntry?["database"] == "shared")
        #expect(bobEntry?["zones"] == ["owner/Zone"])
        // Each entry names the connection's client (from its hello) and how long it ran.
        #expect(bobEntry?["client"] == "sync-tests")
        #expect(entries.allSatisfy { ($0["milliseconds"]?.doubleValue ?? -1) >= 0 }, "every entry has its duration")
        // A reader asks for one form and gets only that one; both come by default.
        let seqs = entries.compactMap { $0["seq"]?.intValue }
        #expect(seqs.count >= 2 && log["jsonLines"]?.stringValue?.split(separator: "\n").count == entries.count)
        let objects = try await admin.call("admin.requestLog", ["form": "entries"] as JSONValue)
        #expect(objects["jsonLines"] == nil, "\(objects)")
        #expect(objects["entries"]?.arrayValue?.compactMap { $0["seq"]?.intValue }.prefix(seqs.count) == seqs[...])
        let lines = try await admin.call("admin.requestLog", ["form": "jsonLines", "after": .int(seqs[seqs.count - 2]), "limit": 1] as JSONValue)
        #expect(lines["entries"] == nil && lines["jsonLines"]?.stringValue?.contains("\"seq\":\(seqs[seqs.count - 1]),") == true, "\(lines)")
        let badForm = await failure { _ = try await admin.call("admin.requestLog", ["form": "text"] as JSONValue) }
        #expect(badForm?.code == .invalidField && badForm?.details["field"] == "params.form", "\(String(describing: badForm))")
        let fileLines = try String(contentsOfFile: dir.file("requests.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(fileLines.contains { $0.contains("has permission readOnly") })
        for client in [owner, alice, bob, admin] { client.close() }
        #expect(await service.stop() == 0)
    }

    /// Pushes go to the user's other connections, not to the one whose request made the change
    /// (CloudKit excludes the device a change originates from).
    @Test func subscribersHearAboutChangesToTheirOwnDatabases() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        let listener = try await connect("owner-secret")
        let bob = try await connect("bob-secret")
        let bobElsewhere = try await connect("bob-secret")
        _ = try await owner.call("subscribe", ["topics": ["databaseChanges"]] as JSONValue)
        _ = try await listener.call("subscribe", ["topics": ["databaseChanges"]] as JSONValue)
        _ = try await bob.call("subscribe", ["topics": ["databaseChanges"]] as JSONValue)
        _ = try await bobElsewhere.call("subscribe", ["topics": ["databaseChanges"]] as JSONValue)
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        _ = try await bob.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "BobZone"]]] as JSONValue)
        var ownerEvents = listener.events.makeAsyncIterator()
        let first = await ownerEvents.next()
        #expect(first?.name == "databaseChanged")
        #expect(first?.data["scope"] == "private")
        #expect(first?.data["zoneID"] == ["zoneName": "Zone", "ownerName": "__defaultOwner__"])
        var bobEvents = bobElsewhere.events.makeAsyncIterator()
        let bobFirst = await bobEvents.next()
        #expect(bobFirst?.data["zoneID"]?["zoneName"] == "BobZone")
        // The changing connections heard nothing of their own changes; a change by the other
        // connection of the same user does reach them (so the first event each gets is that).
        _ = try await listener.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "Second"]]] as JSONValue)
        _ = try await bobElsewhere.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "BobSecond"]]] as JSONValue)
        var ownEvents = owner.events.makeAsyncIterator()
        #expect(await ownEvents.next()?.data["zoneID"]?["zoneName"] == "Second")
        var bobOwnEvents = bob.events.makeAsyncIterator()
        #expect(await bobOwnEvents.next()?.data["zoneID"]?["zoneName"] == "BobSecond")
        for client in [owner, listener, bob, bobElsewhere] { client.close() }
        #expect(await service.stop() == 0)
    }

    @Test func aRestartKeepsRecordsTokensAndUsers() async throws {
        var service = try await start(dataDir: true)
        var owner = try await connect("owner-secret")
        let admin = try await connect(Self.admin)
        _ = try await admin.call("admin.createUser", ["user": "erin", "credential": "erin-secret"] as JSONValue)
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("a")]] as JSONValue)
        let token = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone] as JSONValue)["token"] ?? .null
        owner.close()
        admin.close()
        #expect(await service.stop() == 0)

        service = try await start(dataDir: true)
        owner = try await connect("owner-secret")
        let erin = try await connect("erin-secret")
        _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("b")]] as JSONValue)
        let next = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone, "since": token] as JSONValue)
        #expect(next["changed"]?.arrayValue?.map { $0["recordName"] } == ["b"])
        owner.close()
        erin.close()
        #expect(await service.stop() == 0)
    }

    @Test func aSnapshotExportedFromOneInstanceImportsIntoAnother() async throws {
        let first = try await start()
        let owner = try await connect("owner-secret")
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("a", title: "kept")]] as JSONValue)
        var admin = try await connect(Self.admin)
        let snapshot = try await admin.call("admin.exportSnapshot", Empty())["snapshot"] ?? .null
        owner.close()
        admin.close()
        #expect(await first.stop() == 0)

        // The snapshot leaves credentials out: the users come from --users here, and keep theirs.
        let second = try await MeowProcess.start("sync-service", ["--socket", dir.file("s.sock"), "--in-memory", "--admin-credential", Self.admin,
                                                                     "--users", dir.file("users.json")])
        admin = try await connect(Self.admin)
        let imported = try await admin.call("admin.importSnapshot", ["snapshot": snapshot] as JSONValue)
        #expect(imported["records"] == 1)
        let ownerAgain = try await connect("owner-secret")
        let fetched = try await ownerAgain.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "a", "zoneID": Self.zone]]] as JSONValue)
        #expect(fetched["records"]?.arrayValue?.first?["fields"]?["CD_title"]?["value"] == "kept")
        admin.close()
        ownerAgain.close()
        #expect(await second.stop() == 0)
    }

    @Test func injectedTransientFaultsCarryRetryAfterAndServerResponseLostStillApplies() async throws {
        let service = try await start()
        let owner = try await connect("owner-secret")
        let admin = try await connect(Self.admin)
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        _ = try await admin.call("admin.injectFault", ["code": "requestRateLimited", "op": "records.modify", "user": "owner", "retryAfterSeconds": 3] as JSONValue)
        let limited = await failure {
            _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("a")]] as JSONValue)
        }
        #expect(limited?.code == .requestRateLimited)
        #expect(limited?.details["ckErrorCode"] == 7)
        #expect(limited?.details["retryAfterSeconds"]?.doubleValue == 3)
        let fetchMissing = await failure {
            _ = try await owner.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "a", "zoneID": Self.zone]]] as JSONValue)
        }
        #expect(fetchMissing?.code == .partialFailure)

        _ = try await admin.call("admin.injectFault", ["code": "serverResponseLost", "op": "records.modify", "afterApplying": true] as JSONValue)
        let lost = await failure {
            _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("a")]] as JSONValue)
        }
        #expect(lost?.code == .serverResponseLost)
        let fetched = try await owner.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "a", "zoneID": Self.zone]]] as JSONValue)
        #expect(fetched["records"]?.arrayValue?.count == 1)
        _ = try await owner.call("records.modify", ["database": "private", "saves": [Self.event("b")]] as JSONValue)
        owner.close()
        admin.close()
        #expect(await service.stop() == 0)
    }

    @Test func zoneChangesPageByTokenAndExpireByRetentionOrByForce() async throws {
        let service = try await start(extra: ["--retention", "60"])
        let owner = try await connect("owner-secret")
        let admin = try await connect(Self.admin)
        _ = try await admin.call("admin.setClock", ["now": 1_780_000_000] as JSONValue)
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        let saves: [JSONValue] = (0..<7).map { Self.event("r\($0)") }
        _ = try await owner.call("records.modify", ["database": "private", "saves": .array(saves)] as JSONValue)
        var names: [String] = []
        var token: JSONValue = .null
        var more = true
        while more {
            let page = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone, "since": token, "limit": 3] as JSONValue)
            names += page["changed"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []
            token = page["token"] ?? .null
            more = page["moreComing"] == true
        }
        #expect(names == (0..<7).map { "r\($0)" })

        _ = try await owner.call("records.modify", ["database": "private", "deletes": [["recordName": "r0", "zoneID": Self.zone]]] as JSONValue)
        _ = try await admin.call("admin.setClock", ["advanceSeconds": 120] as JSONValue)
        let expired = await failure {
            _ = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone, "since": token] as JSONValue)
        }
        #expect(expired?.code == .changeTokenExpired)
        #expect(expired?.details["ckErrorCode"] == 21)
        let fresh = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone] as JSONValue)
        #expect(fresh["changed"]?.arrayValue?.count == 6)
        let database = try await owner.call("changes.fetchDatabase", ["database": "private"] as JSONValue)
        _ = try await admin.call("admin.expireChangeTokens", Empty())
        for (op, since) in [("changes.fetchZone", fresh["token"] ?? .null), ("changes.fetchDatabase", database["token"] ?? .null)] {
            let forced = await failure { _ = try await owner.call(op, ["database": "private", "zoneID": Self.zone, "since": since] as JSONValue) }
            #expect(forced?.code == .changeTokenExpired, "\(op)")
        }
        owner.close()
        admin.close()
        #expect(await service.stop() == 0)
    }

    /// A records.modify in the form this package's clients write is read straight from its
    /// bytes; written any other way its envelope is parsed first. Either way its params are read
    /// by the one reader and the service decides the same: a save, the same save again refused,
    /// a stale tag refused.
    @Test func batchesReadFromTheirBytesAreDecidedAsParsedOnes() async throws {
        let service = try await start()
        let raw = try RawConnection(path: dir.file("s.sock"))
        try raw.hello(credential: "owner-secret")
        func call(_ body: String) throws -> JSONValue {
            raw.send(json: body)
            return try raw.nextMessage()
        }
        _ = try call(#"{"id":1,"op":"zones.save","params":{"database":"private","zoneIDs":[{"zoneName":"Zone"}]}}"#)
        let record = #"{"recordName":"R","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields":{"CD_title":{"type":"string","value":"note"}}}"#
        let direct = #"{"id":2,"op":"records.modify","params":{"database":"private","saves":[\#(record)],"atomic":true,"reply":"tags"}}"#
        let parsed = #" {"id": 3, "op": "records.modify", "params": {"database":"private","saves":[\#(record)],"atomic":true,"reply":"tags"}}"#
        // The two bodies take the two paths: the first is in the compact form and its params
        // read from their bytes, the second (a space first) is not.
        for (body, compact) in [(direct, true), (parsed, false)] {
            let found = Array(body.utf8).withUnsafeBufferPointer { CompactEnvelope.leadingID($0) != nil }
            #expect(found == compact, "\(body)")
        }
        let params = #"{"database":"private","saves":[\#(record)],"atomic":true,"reply":"tags"}"#
        #expect((try? ModifyParams.read(params)) != nil)
        let saved = try call(direct)
        #expect(saved["ok"] == true, "\(saved)")
        let tag = try #require(saved["result"]?["saved"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
        for again in [parsed, direct.replacingOccurrences(of: #""id":2"#, with: #""id":4"#)] {
            let refused = try call(again)
            #expect(refused["ok"] == false)
            let item = refused["error"]?["details"]?["partialErrors"]?.objectValue?.values.first
            #expect(item?["code"] == "serverRejectedRequest", "\(refused)")
        }
        let stale = record.replacingOccurrences(of: "}}}", with: #"}},"recordChangeTag":"stale"}"#)
        for body in [#"{"id":5,"op":"records.modify","params":{"database":"private","saves":[\#(stale)]}}"#,
                     #"{"op":"records.modify","id":6,"params":{"database":"private","saves":[\#(stale)]}}"#] {
            let refused = try call(body)
            let item = refused["error"]?["details"]?["partialErrors"]?.objectValue?.values.first
            #expect(item?["code"] == "serverRecordChanged", "\(refused)")
            #expect(item?["details"]?["serverRecord"]?["recordChangeTag"]?.stringValue == tag)
        }
        #expect(await service.stop() == 0)
    }

    /// A bad record in a records.modify is refused with the path of its field, the same in
    /// either envelope form; a change token the service cannot read is invalidArguments.
    @Test func refusalsNameTheFieldInEitherEnvelope() async throws {
        let service = try await start()
        let raw = try RawConnection(path: dir.file("s.sock"))
        try raw.hello(credential: "owner-secret")
        func call(_ body: String) throws -> JSONValue {
            raw.send(json: body)
            return try raw.nextMessage()
        }
        _ = try call(#"{"id":1,"op":"zones.save","params":{"database":"private","zoneIDs":[{"zoneName":"Zone"}]}}"#)
        let good = #"{"recordName":"R","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields":{}}"#
        let bad = #"{"recordName":"S","zoneID":{"zoneName":7},"recordType":"CD_CareEvent"}"#
        for body in [#"{"id":2,"op":"records.modify","params":{"database":"private","saves":[\#(good),\#(bad)]}}"#,
                     #"{"op": "records.modify", "id": 3, "params": {"database": "private", "saves": [\#(good), \#(bad)]}}"#] {
            let refused = try call(body)
            #expect(refused["error"]?["code"] == "invalidField", "\(refused)")
            #expect(refused["error"]?["message"] == "'records.modify': params.saves[1].zoneID.zoneName must be a string.", "\(refused)")
            #expect(refused["error"]?["details"]?["field"] == "params.saves[1].zoneID.zoneName", "\(refused)")
        }
        let missing = try call(#"{"id":4,"op":"records.modify","params":{"saves":[]}}"#)
        #expect(missing["error"]?["code"] == "missingField" && missing["error"]?["message"] == "'records.modify' needs params.database.", "\(missing)")
        for (op, kind) in [("changes.fetchZone", "zone"), ("changes.fetchDatabase", "database")] {
            let refused = try call(#"{"id":5,"op":"\#(op)","params":{"database":"private","zoneID":{"zoneName":"Zone"},"since":"q1"}}"#)
            #expect(refused["error"]?["code"] == "invalidArguments", "\(refused)")
            #expect(refused["error"]?["message"] == .string("params.since is not a \(kind) change token from this service."), "\(refused)")
        }
        #expect(await service.stop() == 0)
    }

    /// A save stores a record's fields text as it was sent when it is already in stored form, and
    /// writes anything else out again, so every record's stored text is the stored form; and a
    /// request cannot pass off other text as its fields (a member that only looks like one is ignored).
    @Test func savesStoreFieldsTextAsSentOnlyInStoredForm() async throws {
        let service = try await start()
        let raw = try RawConnection(path: dir.file("s.sock"))
        try raw.hello(credential: "owner-secret")
        func call(_ id: Int, _ op: String, _ params: String) throws -> String {
            raw.send(json: #"{"id":\#(id),"op":"\#(op)","params":\#(params)}"#)
            let body = try #require(raw.readFrame())
            let text = String(decoding: body, as: UTF8.self)
            #expect(text.contains(#""ok":true"#), "\(op): \(text)")
            return text
        }
        _ = try call(1, "zones.save", #"{"database":"private","zoneIDs":[{"zoneName":"Zone"}]}"#)
        let stored = #"{"CD_note":{"type":"string","value":"café \"q\"\n"},"CD_value":{"type":"double","value":5.5}}"#
        let loose = #"{ "CD_value": {"type": "double", "value": 5.50}, "CD_note": {"value": "caf\u00e9 \"q\"\u000a", "type": "string"} }"#
        let forged = #"{\"CD_note\":{\"type\":\"string\",\"value\":\"forged\"}}"#
        // Each member in stored form, the members in another order (JSON gives them none).
        let unordered = #"{"CD_value":{"type":"double","value":5.5},"CD_note":{"type":"string","value":"café \"q\"\n"}}"#
        let saves = [
            #"{"recordName":"asSent","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields":\#(stored)}"#,
            #"{"recordName":"loose","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields":\#(loose)}"#,
            #"{"recordName":"forging","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields":\#(stored),"fields\u0000text":"\#(forged)"}"#,
            #"{"recordName":"forgingFirst","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields\u0000text":"\#(forged)","fields":\#(loose)}"#,
            #"{"recordName":"unordered","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields":\#(unordered)}"#,
        ]
        let reply = try call(2, "records.modify", #"{"database":"private","saves":[\#(saves.joined(separator: ","))]}"#)
        // The reply's saved records carry their fields (kept as text for three of them, parsed for two).
        #expect(reply.components(separatedBy: #""fields":"# + stored).count - 1 == 5, "\(reply)")
        // Change pages send the stored text as it is: every record's is the stored form.
        let page = try call(3, "changes.fetchZone", #"{"database":"private","zoneID":{"zoneName":"Zone"}}"#)
        #expect(page.components(separatedBy: #""fields":"# + stored).count - 1 == 5, "\(page)")
        #expect(!page.contains("forged"))
        // changedKeys reads fields kept as text like any others: the saved keys merge.
        let more = #"{"CD_extra":{"type":"int64","value":7}}"#
        _ = try call(4, "records.modify", #"{"database":"private","savePolicy":"changedKeys","saves":[{"recordName":"asSent","zoneID":{"zoneName":"Zone"},"recordType":"CD_CareEvent","fields":\#(more)}]}"#)
        let merged = try call(5, "records.fetch", #"{"database":"private","recordIDs":[{"recordName":"asSent","zoneID":{"zoneName":"Zone"}}]}"#)
        let fields = try JSONParser.parse(merged)["result"]?["records"]?.arrayValue?.first?["fields"]
        #expect(fields?["CD_extra"]?["value"] == 7 && fields?["CD_value"]?["value"] == 5.5 && fields?["CD_note"]?["type"] == "string", "\(merged)")
        _ = await service.stop()
    }
}
