import CloudWire
import Foundation
import MeowWire
@testable import SyncServiceKit
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Which requests a fault naming a zone or a record type picks: the injector's matching rule,
/// called directly.
@Suite("Fault rules by zone and record type")
struct FaultTargetTests {
    static let coreData = ZoneID(zoneName: ZoneID.coreDataZoneName)

    static func modify(_ records: [(type: String, zone: ZoneID)], deletes: [ZoneID] = []) -> FaultTarget {
        FaultTarget(of: ModifyParams(
            database: .private,
            saves: records.enumerated().map { CloudRecord(recordName: "r\($0.offset)", zoneID: $0.element.zone, recordType: $0.element.type) },
            deletes: deletes.map { DeleteItem(recordName: "d", zoneID: $0) }))
    }

    @Test("a recordType rule takes a batch saving that type (even beside others) and leaves other batches alone")
    func recordType() throws {
        let faults = FaultInjector()
        _ = try faults.arm(CloudFault(code: "zoneBusy", op: "records.modify", recordType: "CD_CareEvent", count: 2))
        #expect(faults.take(op: "records.modify", user: "u") { Self.modify([("CD_CareSession", Self.coreData)]) } == nil)
        #expect(faults.take(op: "records.modify", user: "u") { Self.modify([], deletes: [Self.coreData]) } == nil)
        #expect(faults.take(op: "records.fetch", user: "u") {
            FaultTarget(of: FetchRecordsParams(database: .private, recordIDs: [RecordID(recordName: "e", zoneID: Self.coreData)]))
        } == nil)
        let mixed = faults.take(op: "records.modify", user: "u") { Self.modify([("CD_CareSession", Self.coreData), ("CD_CareEvent", Self.coreData)]) }
        #expect(mixed?.fault.code == "zoneBusy")
        #expect(faults.take(op: "records.modify", user: "u") { Self.modify([("CD_CareEvent", Self.coreData)]) } != nil)
        #expect(faults.take(op: "records.modify", user: "u") { Self.modify([("CD_CareEvent", Self.coreData)]) } == nil, "count 2 is used up")
    }

    @Test("a zone rule takes requests naming that zone: modify, fetch, zone changes, zones and shares")
    func zone() throws {
        let faults = FaultInjector()
        _ = try faults.arm(CloudFault(code: "zoneBusy", zone: "Cats", count: 100))
        let cats = ZoneID(zoneName: "Cats"), dogs = ZoneID(zoneName: "Dogs")
        func taken(_ op: String, _ params: any Sendable) -> Bool {
            faults.take(op: op, user: "u") { FaultTarget(of: params) } != nil
        }
        #expect(taken("records.modify", ModifyParams(database: .private, saves: [CloudRecord(recordName: "a", zoneID: cats, recordType: "T")])))
        #expect(!taken("records.modify", ModifyParams(database: .private, saves: [CloudRecord(recordName: "a", zoneID: dogs, recordType: "T")])))
        #expect(taken("records.modify", ModifyParams(database: .private, deletes: [DeleteItem(recordName: "a", zoneID: cats)])))
        #expect(taken("changes.fetchZone", FetchZoneChangesParams(database: .private, zoneID: cats)))
        #expect(!taken("changes.fetchZone", FetchZoneChangesParams(database: .private, zoneID: dogs)))
        #expect(taken("zones.fetch", ZonesParams(database: .private, zoneIDs: [dogs, cats])))
        #expect(!taken("zones.fetch", ZonesParams(database: .private)), "naming no zone is not naming Cats")
        #expect(!taken("changes.fetchDatabase", FetchDatabaseChangesParams(database: .private)))
        #expect(taken("shares.fetch", ShareParams(zoneID: cats)))
    }

    @Test("zoneOwner is the real owner: __defaultOwner__ stands for the caller")
    func zoneOwner() throws {
        let faults = FaultInjector()
        _ = try faults.arm(CloudFault(code: "zoneBusy", zoneOwner: "olivia", count: 100))
        let own = FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: "Cats"))
        let olivias = FetchZoneChangesParams(database: .shared, zoneID: ZoneID(zoneName: "Cats", ownerName: "olivia"))
        #expect(faults.take(op: "changes.fetchZone", user: "olivia") { FaultTarget(of: own) } != nil)
        #expect(faults.take(op: "changes.fetchZone", user: "pablo") { FaultTarget(of: own) } == nil)
        #expect(faults.take(op: "changes.fetchZone", user: "pablo") { FaultTarget(of: olivias) } != nil)
    }

    @Test("a rule without zone or record type never works out the target; one with them needs a match")
    func plainRules() throws {
        let faults = FaultInjector()
        _ = try faults.arm(CloudFault(code: "zoneBusy", op: "zones.fetch"))
        #expect(faults.take(op: "zones.fetch", user: "u") { Issue.record("target worked out for a plain rule"); return FaultTarget() } != nil)
        _ = try faults.arm(CloudFault(code: "zoneBusy", recordType: "CD_CareEvent"))
        #expect(faults.take(op: "zones.fetch", user: "u") == nil, "a request with no target matches no recordType rule")
    }
}

/// Fault effects beyond transient errors, over the wire: a dropped connection before or after the
/// commit (the serverResponseLost case a client meets), a partial frame, seeded probability, and
/// faults armed from a start-up file.
@Suite("Injected fault effects")
struct FaultEffectTests {
    struct Cloud {
        let directory = TemporaryDirectory()
        let service: MeowProcess
        var socket: String { directory.file("s.sock") }

        init(faults: String? = nil) async throws {
            try #"{"users":[{"user":"u","credential":"u-secret"}]}"#.write(toFile: directory.file("users.json"), atomically: true, encoding: .utf8)
            var arguments = ["--socket", directory.file("s.sock"), "--in-memory", "--users", directory.file("users.json"),
                             "--admin-credential", "admin-secret-for-tests"]
            if let faults {
                try faults.write(toFile: directory.file("faults.json"), atomically: true, encoding: .utf8)
                arguments += ["--faults", directory.file("faults.json")]
            }
            service = try await MeowProcess.start("sync-service", arguments)
        }

        /// A held request's reply waits for the test's release: the deadline is against a hang,
        /// long enough for a test on a loaded machine to get there.
        func connect(_ credential: String) async throws -> WireClient {
            let client = try WireClient(socketPath: socket, timeout: .seconds(60))
            try await client.hello(client: "faults", credential: credential)
            return client
        }

        func save(_ client: WireClient, _ name: String) async throws(WireError) -> JSONValue {
            try await client.call("records.modify", ["database": "private", "saves": [[
                "recordName": .string(name), "recordType": "CD_CareEvent",
                "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"], "fields": [:]]]])
        }

        func exists(_ name: String) async throws -> Bool {
            let client = try await connect("u-secret")
            defer { client.close() }
            do {
                _ = try await client.call("records.fetch", ["database": "private", "recordIDs": [[
                    "recordName": .string(name), "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"]]]])
                return true
            } catch {
                return false
            }
        }
    }

    static func arm(_ cloud: Cloud, _ fault: JSONValue) async throws {
        let admin = try await cloud.connect("admin-secret-for-tests")
        _ = try await admin.call("admin.injectFault", fault)
        admin.close()
    }

    static func prepareZone(_ cloud: Cloud) async throws {
        let user = try await cloud.connect("u-secret")
        _ = try await user.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "com.apple.coredata.cloudkit.zone"]]])
        user.close()
    }

    @Test("dropBeforeCommit: the connection closes with no reply and nothing was applied")
    func dropBeforeCommit() async throws {
        let cloud = try await Cloud()
        try await Self.prepareZone(cloud)
        try await Self.arm(cloud, ["effect": "dropBeforeCommit", "op": "records.modify", "user": "u"])
        let client = try await cloud.connect("u-secret")
        await #expect(throws: WireError.self) { _ = try await cloud.save(client, "never") }
        #expect(try await cloud.exists("never") == false)
        _ = await cloud.service.stop()
    }

    @Test("dropAfterCommit: the connection closes with no reply, yet the save was applied (serverResponseLost)")
    func dropAfterCommit() async throws {
        let cloud = try await Cloud()
        try await Self.prepareZone(cloud)
        try await Self.arm(cloud, ["effect": "dropAfterCommit", "op": "records.modify"])
        let client = try await cloud.connect("u-secret")
        do {
            _ = try await cloud.save(client, "applied")
            Issue.record("expected the connection to drop")
        } catch {
            #expect(error.code == .connectionClosed)
        }
        #expect(try await cloud.exists("applied"))
        _ = await cloud.service.stop()
    }

    @Test("partialFrame: half a reply frame arrives, then the connection closes; the save was applied")
    func partialFrame() async throws {
        let cloud = try await Cloud()
        try await Self.prepareZone(cloud)
        try await Self.arm(cloud, ["effect": "partialFrame", "op": "records.modify"])
        let raw = try RawConnection(path: cloud.socket)
        #expect(try raw.hello(credential: "u-secret")["ok"] == true)
        raw.send(["id": 7, "op": "records.modify", "params": ["database": "private", "saves": [[
            "recordName": "half", "recordType": "CD_CareEvent", "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"], "fields": [:]]]]])
        #expect(raw.readFrame(timeout: 10) == nil)   // no whole frame, only a prefix of one
        #expect(raw.waitForClose())
        #expect(try await cloud.exists("half"))
        _ = await cloud.service.stop()
    }

    @Test("probability with a seed picks the same requests on every run")
    func seededProbability() async throws {
        func pattern() async throws -> [Bool] {
            let cloud = try await Cloud()
            try await Self.arm(cloud, ["code": "serviceUnavailable", "op": "zones.fetch", "probability": 0.5, "seed": 42, "count": 1000])
            let client = try await cloud.connect("u-secret")
            var failed: [Bool] = []
            for _ in 0..<24 {
                do { _ = try await client.call("zones.fetch", ["database": "private"]); failed.append(false) } catch { failed.append(true) }
            }
            client.close()
            _ = await cloud.service.stop()
            return failed
        }
        let first = try await pattern()
        let second = try await pattern()
        #expect(first == second)
        #expect(first.contains(true) && first.contains(false), "\(first)")
    }

    @Test("hold: the request waits unrun while other clients are served, until admin.releaseHeldRequests; awaitHeldRequests says when it is there")
    func hold() async throws {
        let cloud = try await Cloud()
        try await Self.prepareZone(cloud)
        try await Self.arm(cloud, ["effect": "hold", "op": "records.modify", "user": "u"])
        let admin = try await cloud.connect("admin-secret-for-tests")
        let nothingYet = await #expect(throws: WireError.self) { _ = try await admin.call("admin.awaitHeldRequests", ["timeoutSeconds": 0]) }
        #expect(nothingYet?.code == .timedOut)
        #expect(nothingYet?.details["held"] == 0)
        let client = try await cloud.connect("u-secret")
        let saving = Task { try await cloud.save(client, "held-1") }
        #expect(try await admin.call("admin.awaitHeldRequests", ["count": 1])["held"] == 1)
        // Held before it ran: nothing is saved yet, and other requests are answered meanwhile.
        #expect(try await cloud.exists("held-1") == false)
        #expect(try await admin.call("admin.releaseHeldRequests", [:])["released"] == 1)
        #expect(try await saving.value["saved"]?.arrayValue?.count == 1)
        #expect(try await cloud.exists("held-1"))
        // The fault had count 1: the next save is not held.
        _ = try await cloud.save(client, "held-2")
        #expect(try await admin.call("admin.releaseHeldRequests", [:])["released"] == 0)
        let invalid = await #expect(throws: WireError.self) { _ = try await admin.call("admin.awaitHeldRequests", ["count": 0]) }
        #expect(invalid?.code == .invalidArguments)
        client.close()
        admin.close()
        _ = await cloud.service.stop()
    }

    /// CloudKit's schema is one per container, and a field's first save defines its type. Two
    /// requests in different zones do not wait for each other's locks: the one held here decides
    /// (defining CD_weight as DOUBLE), and another defines it as STRING and commits meanwhile.
    /// Committing the held decision as made would keep a DOUBLE record under a STRING schema
    /// (a device of another app version could not read it); it is decided again and refused.
    @Test("holdBeforeCommit: a modify held after deciding meets a field type another zone's request defined meanwhile, and is refused")
    func holdBeforeCommitMeetsTheSchemaAnotherRequestDefined() async throws {
        let cloud = try await Cloud()
        let client = try await cloud.connect("u-secret")
        _ = try await client.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "com.apple.coredata.cloudkit.zone"], ["zoneName": "Cats"]]])
        func save(_ name: String, zone: String, weight: JSONValue, on connection: WireClient) async throws(WireError) -> JSONValue {
            try await connection.call("records.modify", ["database": "private", "saves": [[
                "recordName": .string(name), "recordType": "CD_CareEvent", "zoneID": ["zoneName": .string(zone)],
                "fields": ["CD_weight": weight]]]])
        }
        try await Self.arm(cloud, ["effect": "holdBeforeCommit", "op": "records.modify", "zone": "Cats"])
        let admin = try await cloud.connect("admin-secret-for-tests")
        let held = Task { () async throws(WireError) -> JSONValue in try await save("first", zone: "Cats", weight: ["type": "double", "value": 4.2], on: client) }
        #expect(try await admin.call("admin.awaitHeldRequests", ["count": 1])["held"] == 1)
        let other = try await cloud.connect("u-secret")
        _ = try await save("second", zone: "com.apple.coredata.cloudkit.zone", weight: ["type": "string", "value": "4.2 kg"], on: other)
        #expect(try await admin.call("admin.releaseHeldRequests", [:])["released"] == 1)
        let refused = await #expect(throws: WireError.self) { _ = try await held.value }
        #expect(refused?.code == .partialFailure)
        let item = refused?.details["partialErrors"]?.objectValue?.values.first
        #expect(item?["code"] == "invalidArguments")
        #expect(item?["message"] == "invalid attempt to set value type DOUBLE for field 'CD_weight' for type 'CD_CareEvent', defined to be: STRING")
        #expect(try await admin.call("admin.schema", [:])["recordTypes"]?["CD_CareEvent"]?["CD_weight"] == "STRING")
        #expect(try await cloud.exists("second"))
        // The request log tells the story: held before its commit, then decided again.
        let log = try await admin.call("admin.requestLog", [:])["entries"]?.arrayValue ?? []
        let reasons = log.last { $0["code"] == "partialFailure" }?["permissions"]?.arrayValue?.compactMap { $0["reason"]?.stringValue } ?? []
        #expect(reasons.contains("injected hold before the commit: released"), "\(reasons)")
        #expect(reasons.contains { $0.hasPrefix("the schema changed while the request waited: decided again") }, "\(reasons)")
        // The fault's options are checked: holding before a commit only means something for a modify.
        let wrongOp = await #expect(throws: WireError.self) { _ = try await admin.call("admin.injectFault", ["effect": "holdBeforeCommit", "op": "records.fetch"]) }
        #expect(wrongOp?.code == .invalidArguments)
        client.close()
        other.close()
        admin.close()
        _ = await cloud.service.stop()
    }

    @Test("faults armed from a start-up file apply to the first matching requests, with latency")
    func startUpFile() async throws {
        let cloud = try await Cloud(faults: #"{"faults":[{"op":"zones.fetch","code":"zoneBusy","retryAfterSeconds":2,"latencyMilliseconds":50,"count":2}]}"#)
        let client = try await cloud.connect("u-secret")
        for _ in 0..<2 {
            do {
                _ = try await client.call("zones.fetch", ["database": "private"])
                Issue.record("expected zoneBusy")
            } catch {
                #expect(error.code == .zoneBusy)
                #expect(error.details["retryAfterSeconds"]?.doubleValue == 2)
            }
        }
        #expect(try await client.call("zones.fetch", ["database": "private"])["zones"] != nil)
        client.close()
        _ = await cloud.service.stop()
    }

    @Test("a recordType rule on the real service fails a CareEvent save, not a CareSession save")
    func recordTypeRule() async throws {
        let cloud = try await Cloud()
        try await Self.prepareZone(cloud)
        try await Self.arm(cloud, ["code": "zoneBusy", "op": "records.modify", "recordType": "CD_CareEvent"])
        let client = try await cloud.connect("u-secret")
        let session = try await client.call("records.modify", ["database": "private", "saves": [[
            "recordName": "session-1", "recordType": "CD_CareSession",
            "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"], "fields": [:]]]])
        #expect(session["saved"]?.arrayValue?.count == 1)
        do {
            _ = try await cloud.save(client, "event-1")   // a CD_CareEvent
            Issue.record("expected the injected zoneBusy")
        } catch {
            #expect(error.code == .zoneBusy)
            #expect(error.details["injected"] == true)
        }
        #expect(try await cloud.exists("session-1"))
        #expect(try await cloud.exists("event-1") == false)
        _ = try await cloud.save(client, "event-2")   // the fault had count 1
        #expect(try await cloud.exists("event-2"))
        client.close()
        _ = await cloud.service.stop()
    }

    @Test("any CloudKit code can be injected as a request's error (changeTokenExpired, limitExceeded, zoneNotFound), with its number")
    func anyCloudKitCode() async throws {
        let cloud = try await Cloud()
        let admin = try await cloud.connect("admin-secret-for-tests")
        let user = try await cloud.connect("u-secret")
        let zone: JSONValue = ["zoneName": "Z"]
        _ = try await user.call("zones.save", ["database": "private", "zoneIDs": [zone]])
        for (code, number) in [("changeTokenExpired", 21), ("limitExceeded", 27), ("zoneNotFound", 26)] {
            _ = try await admin.call("admin.injectFault", ["code": .string(code), "op": "changes.fetchZone", "count": 1])
            do {
                _ = try await user.call("changes.fetchZone", ["database": "private", "zoneID": zone])
                Issue.record("expected \(code)")
            } catch {
                #expect(error.code.rawValue == code)
                #expect(error.details["ckErrorCode"] == .int(number))
                #expect(error.details["injected"] == true)
            }
        }
        // The fault was used up: the next fetch is answered.
        #expect(try await user.call("changes.fetchZone", ["database": "private", "zoneID": zone])["changed"] != nil)
        admin.close(); user.close()
        _ = await cloud.service.stop()
    }

    @Test("a bad fault is refused with a reason")
    func badFault() async throws {
        let cloud = try await Cloud()
        let admin = try await cloud.connect("admin-secret-for-tests")
        for fault: JSONValue in [["effect": "explode"], ["code": "serverRecordChanged"], ["code": "partialFailure"], ["code": "invalidJSON"],
                                 ["code": "zoneBusy", "probability": 2.0]] {
            do {
                _ = try await admin.call("admin.injectFault", fault)
                Issue.record("expected invalidArguments for \(fault)")
            } catch {
                #expect(error.code == .invalidArguments)
            }
        }
        admin.close()
        _ = await cloud.service.stop()
    }

    @Test("held pushes arrive only on release, in commit order; dropped ones never arrive")
    func heldPushes() async throws {
        let cloud = try await Cloud()
        let listener = try await cloud.connect("u-secret")
        _ = try await listener.call("subscribe", ["topics": ["databaseChanges"]])
        var events = listener.events.makeAsyncIterator()
        let admin = try await cloud.connect("admin-secret-for-tests")
        let user = try await cloud.connect("u-secret")

        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await user.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "Z1"]]])
        _ = try await user.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "Z2"]]])
        let released = try await admin.call("admin.releasePushes", [:])
        #expect(released["delivered"] == 2)   // both were held, none had been sent
        let first = await events.next(), second = await events.next()
        #expect(first?.data["zoneID"]?["zoneName"] == "Z1")
        #expect(second?.data["zoneID"]?["zoneName"] == "Z2")

        _ = try await admin.call("admin.holdPushes", [:])
        _ = try await user.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "Lost"]]])
        let dropped = try await admin.call("admin.releasePushes", ["drop": true])
        #expect(dropped["dropped"] == 1)
        _ = try await user.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "Z3"]]])
        let next = await events.next()
        #expect(next?.data["zoneID"]?["zoneName"] == "Z3")   // the dropped push never came

        // Anything a lost push announced is still found by fetching changes (events are hints).
        let zones = try await user.call("changes.fetchDatabase", ["database": "private"])["changedZones"]?.arrayValue ?? []
        #expect(zones.contains { $0["zoneName"] == "Lost" })
        for client in [listener, admin, user] { client.close() }
        _ = await cloud.service.stop()
    }
}
