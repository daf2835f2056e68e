import CloudWire
import Foundation
import MeowWire
import Testing
import TestSupport
@testable import CloudMirrorKit
@testable import StoreServiceKit

extension Mirroring {
    /// Zones, tokens, limits, crashes, retries and accounts; real processes (kill -9 where it says so).
    @Suite("Mirroring: zones, tokens, limits, crashes and retries", .timeLimit(.minutes(5)))
    struct RecoveryTests {
        /// Starts a sync.send on the device at `socket` in the background and returns once the
        /// cloud has the first of its records (so a kill lands in the middle of the send).
        static func sendUntilPartway(socket: String, cloud: Cloud) async throws -> (Task<Bool, Never>, WireClient, Bool) {
            let sending = Task { () -> Bool in
                guard let client = try? WireClient(socketPath: socket, timeout: .seconds(120)) else { return false }
                _ = try? await client.hello(client: "sender")
                return (try? await client.call("sync.send", [:] as JSONValue)) != nil
            }
            let watcher = try await cloud.connect("owner-secret")
            for _ in 0..<1000 {
                let changes = try? await watcher.call("changes.fetchZone", ["database": "private", "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"], "limit": 1])
                if changes?["changed"]?.arrayValue?.isEmpty == false { return (sending, watcher, true) }
                try await Task.sleep(for: .milliseconds(10))
            }
            return (sending, watcher, false)
        }

        static func modifyCodes(_ cloud: Cloud, after seq: Int) async throws -> [String] {
            let entries = try await cloud.admin("admin.requestLog", ["after": .int(seq)])["entries"]?.arrayValue ?? []
            return entries.filter { $0["op"] == "records.modify" }.map { $0["code"]?.stringValue ?? "" }
        }

        static func lastLogSeq(_ cloud: Cloud) async throws -> Int {
            try await cloud.admin("admin.requestLog", [:])["entries"]?.arrayValue?.last?["seq"]?.intValue ?? 0
        }

        @Test("Scenario 2: a CareEvent forced into the shared store without a share zone: seed 002's fault line, unexportable, refused by the server")
        func scenario2() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let ids = try await a.insertEvents(["stray"], store: "Shared")
            let sent = try await a.send()
            #expect(sent["requests"] == 0)
            let line = "CoreData: fault: Illegal attempt to work with the core-data or default zone in the shared database: <CKRecordZoneID: zoneName=com.apple.coredata.cloudkit.zone, ownerName=__defaultOwner__>"
            #expect(await a.process.waitForLine(containing: line) == line)
            let status = try await a.status()
            let shared = try #require(status["stores"]?.arrayValue?.first { $0["store"] == "Shared" })
            #expect(shared["unexportable"] == .array(ids.map { .string($0) }))
            // The device keeps running and private data still syncs.
            try await a.insertEvents(["fine"])
            #expect(try await a.send()["saved"] == 1)
            let owner = try await cloud.connect("owner-secret")
            do {
                _ = try await owner.call("records.modify", ["database": "shared", "saves": [["recordName": "stray", "recordType": "CD_CareEvent",
                                                                                             "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"], "fields": [:]]]])
                Issue.record("the server accepted a record in the shared database's core-data zone")
            } catch {
                #expect(error.details["partialErrors"]?["stray"]?["code"] == "permissionFailure")
            }
            owner.close()
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("Scenario 8: 1,360 records go in requests of at most 400; a lowered server limit makes the client split until all arrive")
        func scenario8() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents((0..<1360).map { String(format: "a%04d", $0) })
            var seq = try await Self.lastLogSeq(cloud)
            let first = try await a.send()
            #expect(first["saved"] == 1360)
            #expect(try await Self.modifyCodes(cloud, after: seq) == ["ok", "ok", "ok", "ok"])
            _ = try await cloud.admin("admin.setLimits", ["maxItemsPerRequest": 150])
            try await a.insertEvents((0..<1360).map { String(format: "b%04d", $0) })
            seq = try await Self.lastLogSeq(cloud)
            let second = try await a.send()
            #expect(second["saved"] == 1360)
            let codes = try await Self.modifyCodes(cloud, after: seq)
            #expect(Array(codes.prefix(2)) == ["limitExceeded", "limitExceeded"])
            #expect(codes.filter { $0 == "ok" }.count == 14)
            try await b.fetch()
            #expect(try await b.objects().count == 2720)
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 20: B fetches A's delete while B has a pending save: delete wins, no orphan pending change")
        func scenario20() async throws {
            let (cloud, a, b, onA, onB) = try await ConflictTests.pair(["e"])
            try await a.delete(onA[0])
            try await a.send()
            try await b.set(onB[0], ["note": "pending"])
            #expect(try await b.pending() == 1)
            let fetched = try await b.fetch()
            #expect(fetched["deletedRecords"] == 1)
            #expect(try await b.object(id: "e") == nil)
            #expect(try await b.pending() == 0)
            #expect(try await b.send()["requests"] == 0)
            await ConflictTests.stop(cloud, a, b)
        }

        @Test("Scenario 24: the zone was deleted behind the client's back; zoneNotFound, recreate, re-upload, B sees the records")
        func scenario24() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["before"])
            try await a.send()
            let owner = try await cloud.connect("owner-secret")
            _ = try await owner.call("zones.delete", ["database": "private", "zoneIDs": [["zoneName": "com.apple.coredata.cloudkit.zone"]]])
            owner.close()
            try await a.insertEvents(["after"])
            let seq = try await Self.lastLogSeq(cloud)
            let sent = try await a.send()
            #expect(sent["saved"] == 2)
            #expect(try await Self.modifyCodes(cloud, after: seq).first == "partialFailure")
            try await b.fetch()
            #expect(try await b.ids() == ["after", "before"])
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 25: zone deleted → local rows removed; purged → removed and never re-uploaded; encrypted-data reset → kept and re-uploaded")
        func scenario25() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]

            // Deleted.
            try await a.insertEvents(["d1", "d2"])
            try await a.send()
            try await b.fetch()
            let owner = try await cloud.connect("owner-secret")
            _ = try await owner.call("zones.delete", ["database": "private", "zoneIDs": [zone]])
            let deleted = try await b.fetch()
            #expect(deleted["zonesRemoved"] == ["__defaultOwner__/com.apple.coredata.cloudkit.zone"])
            #expect(try await b.objects().isEmpty)
            try await a.fetch()
            #expect(try await a.objects().isEmpty)

            // Purged, with an edit pending on B: removed, and never re-uploaded.
            try await a.insertEvents(["p1"])
            try await a.send()
            try await b.fetch()
            let p1 = try #require(try await b.object(id: "p1")?["objectID"]?.stringValue)
            try await b.set(p1, ["note": "pending when purged"])
            _ = try await cloud.admin("admin.reset", ["scope": "zone", "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone", "ownerName": "owner"]])
            let purged = try await b.fetch()
            #expect(purged["zonesRemoved"] == ["purged:__defaultOwner__/com.apple.coredata.cloudkit.zone"])
            #expect(try await b.objects().isEmpty)
            #expect(try await b.send()["requests"] == 0)
            let zones = try await owner.call("zones.fetch", ["database": "private"])
            #expect(zones["zones"]?.arrayValue?.count == 1)

            // Encrypted-data reset: kept, and all re-uploaded.
            try await a.fetch()
            try await a.insertEvents(["k1", "k2"])
            try await a.send()
            try await b.fetch()
            _ = try await cloud.admin("admin.reset", ["scope": "encryptedData", "user": "owner"])
            let reset = try await b.fetch()
            #expect(reset["zonesReset"] == ["__defaultOwner__/com.apple.coredata.cloudkit.zone"])
            #expect(try await b.ids() == ["k1", "k2"])
            let resent = try await b.send()
            #expect(resent["saved"] == 2)
            #expect(try await cloud.records(user: "owner").count == 2)
            owner.close()
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 26: changeTokenExpired; the client refetches from scratch; no duplicates, no pending change lost")
        func scenario26() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["e1", "e2", "e3"])
            try await a.send()
            try await b.fetch()
            try await a.insertEvents(["e4", "e5"])
            try await a.send()
            let mine = try #require(try await b.object(id: "e1")?["objectID"]?.stringValue)
            try await b.set(mine, ["note": "B's pending edit"])
            _ = try await cloud.admin("admin.expireChangeTokens", [:])
            let fetched = try await b.fetch()
            #expect(fetched["tokensExpired"]?.intValue ?? 0 >= 1)
            #expect(try await b.ids() == ["e1", "e2", "e3", "e4", "e5"])
            #expect(try await b.object(id: "e1")?["values"]?["note"] == "B's pending edit")
            #expect(try await b.pending() == 1)
            try await b.send()
            try await a.fetch()
            #expect(try await a.object(id: "e1")?["values"]?["note"] == "B's pending edit")
            #expect(try await cloud.records(user: "owner").count == 5)
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 27: store-service killed right after a save; after restart the write and its queue entry both exist")
        func scenario27() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("a-data")
            let a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            try await a.insertEvents(["acknowledged"])
            a.process.kill()
            let restarted = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            #expect(try await restarted.ids() == ["acknowledged"])
            #expect(try await restarted.status()["quiescent"] == false)
            #expect(try await restarted.send()["saved"] == 1)
            // Killed again after the send: nothing is sent twice, nothing is left.
            restarted.process.kill()
            let again = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            #expect(try await again.send()["requests"] == 0)
            #expect(try await again.pending() == 0)
            #expect(try await cloud.records(user: "owner").count == 1)
            _ = await again.stop()
            await cloud.stop()
        }

        @Test("Scenario 28: writes made while the sync-service is down are queued durably and sent once it is back")
        func scenario28() async throws {
            let directory = TemporaryDirectory(prefix: "mi")
            let cloud = try await Cloud.start(directory: directory, onDisk: true)
            let data = directory.file("a-data")
            let a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            try await a.insertEvents(["online"])
            try await a.send()
            await cloud.stop()
            try await a.insertEvents(["offline-1", "offline-2"])
            let down = try await a.failure("sync.send")
            #expect([ErrorCode.networkUnavailable, .connectionClosed].contains(down.code))
            #expect(try await a.pending() == 2)
            #expect(try await a.status()["lastError"]?["code"] != .null)
            a.process.kill()
            let back = try await Cloud.start(directory: directory, onDisk: true)
            let restarted = try await Device.start("A", user: "owner", cloud: back, dataDirectory: data)
            #expect(try await restarted.send()["saved"] == 2)
            #expect(try await back.records(user: "owner").count == 3)
            _ = await restarted.stop()
            await back.stop()
        }

        @Test("Scenario 31: requestRateLimited with retryAfter N: the change stays pending, is not retried before N seconds, then succeeds")
        func scenario31() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            try await a.insertEvents(["later"])
            _ = try await cloud.admin("admin.injectFault", ["code": "requestRateLimited", "op": "records.modify", "user": "owner", "retryAfterSeconds": 2])
            let started = Date()
            let limited = try await a.failure("sync.send")
            #expect(limited.code == .requestRateLimited)
            #expect(limited.details["retryAfterSeconds"]?.doubleValue == 2)
            #expect(try await a.pending() == 1)
            let seq = try await Self.lastLogSeq(cloud)
            let early = try await a.send()
            #expect(early["requests"] == 0)
            #expect(early["deferred"] == 1)
            #expect(early["retryAfterSeconds"]?.doubleValue ?? 0 > 0)
            #expect(try await Self.modifyCodes(cloud, after: seq).isEmpty)
            // The deferral is measured from the refused request: not before N seconds after it.
            let waited = try #require(early["retryAfterSeconds"]?.doubleValue)
            #expect(waited <= 2)
            #expect(Date().timeIntervalSince(started) + waited >= 2)
            // The device's clock is moved past the deferral instead of waiting it out; a move
            // short of it still sends nothing.
            _ = try await a.call("clock.set", ["advanceSeconds": .double(waited / 2)])
            #expect(try await a.send()["deferred"] == 1)
            _ = try await a.call("clock.set", ["advanceSeconds": .double(waited)])
            #expect(try await a.send()["saved"] == 1)
            #expect(try await a.pending() == 0)
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("Three batches in flight: when the first is refused, the others (already sent) are still answered and applied; nothing is sent twice or lost")
        func batchSentAheadOfARefusal() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let ids = (0..<1300).map { "e\($0)" }
            try await a.insertEvents(ids)
            _ = try await cloud.admin("admin.injectFault", ["code": "serviceUnavailable", "op": "records.modify", "user": "owner", "retryAfterSeconds": 0.3])
            let refused = try await a.failure("sync.send")
            #expect(refused.code == .serviceUnavailable)
            #expect(refused.details["deferredItems"] == 400)
            // The second and third batches went out before the first one's answer and were
            // saved: their verdicts are applied, so only the refused batch and the one never
            // sent wait.
            #expect(try await a.pending() == 500)
            #expect(try await cloud.records(user: "owner").count == 800)
            _ = try await a.call("clock.set", ["advanceSeconds": 1])
            #expect(try await a.send()["saved"] == 500)
            #expect(try await a.pending() == 0)
            let names = try await cloud.records(user: "owner").compactMap { $0["recordName"]?.stringValue }
            #expect(names.count == 1300 && Set(names).count == 1300)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await b.fetch()
            #expect(Set(try await b.ids()) == Set(ids))
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("A batch in flight saves events of a session the batch before it finds deleted: the cascade's deletes follow them to the server")
        func cascadeReachesABatchInFlight() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let session = try await a.insertSession("doomed")
            try await a.send()
            try await b.fetch()
            let onB = try #require(try await b.object(id: "doomed", entity: "CareSession")?["objectID"]?.stringValue)
            try await b.delete(onB)
            try await b.send()
            // A has not fetched: it renames the session, then adds 500 events to it. The rename
            // leads the first batch; the second, with the last events, goes out before the
            // first one's answer.
            try await a.set(session, ["title": "renamed"])
            try await a.insertEvents((0..<500).map { "e\($0)" }, session: session)
            _ = try await a.send()
            // The server no longer has the session (unknownItem): delete wins, the session and
            // its events go on A, and the events the second batch saved go from the server too.
            #expect(try await a.objects("CareEvent").isEmpty)
            #expect(try await a.objects("CareSession").allSatisfy { $0["values"]?["id"] != "doomed" })
            #expect(try await a.pending() == 0)
            #expect(try await cloud.records(user: "owner").filter { $0["recordType"] == "CD_CareEvent" }.isEmpty)
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("History that queues nothing sendable (objects inserted and deleted before any send) does not end a send early")
        func historyThatSendsNothingDoesNotEndTheSend() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let gone = try await a.insertEvents((0..<450).map { "gone-\($0)" })
            for objectID in gone { try await a.delete(objectID) }
            try await a.insertEvents((0..<100).map { "kept-\($0)" })
            // History is queued a batch's worth (400 changes) at a time; the first 400 queue
            // nothing that can be sent, and the send must look further rather than stop.
            let sent = try await a.send()
            #expect(sent["saved"]?.intValue ?? 0 >= 100)
            #expect(try await a.pending() == 0)
            let names = try await cloud.records(user: "owner").compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue }
            #expect(names.filter { $0.hasPrefix("kept-") }.count == 100 && !names.contains { $0.hasPrefix("gone-") })
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("An imported record's edit stamps are the record's own; a later local edit restamps only the fields it changed")
        func importedStampsAreTheRecords() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["stamped"])
            try await a.send()
            try await b.fetch()
            let onB = try #require(try await b.object(id: "stamped")?["objectID"]?.stringValue)
            try await b.set(onB, ["note": "edited on B"])
            #expect(try await b.send()["saved"] == 1)
            let record = try #require(try await cloud.records(user: "owner").first { $0["fields"]?["CD_id"]?["value"] == "stamped" })
            let stamps = FieldStamp.decode(record["fields"]?[MirrorBookkeeping.fieldTimesField]?["value"]?.stringValue)
            #expect(stamps["CD_note"]?.device == "B")
            // Fields B did not touch keep A's stamps, read from the fields B kept when it fetched.
            #expect(stamps["CD_value"]?.device == "A" && stamps["CD_id"]?.device == "A")
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("A new object's stamps ride in its queue entry: an edit before the send restamps only its field, and after the send the kept record holds them for the next edit")
        func newObjectStampsSurviveEditsAndTheSend() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let objectID = try #require(try await a.insertEvents(["fresh"]).first)
            try await a.set(objectID, ["note": "edited before sending"])
            #expect(try await a.send()["saved"] == 1)
            func stamps() async throws -> [String: FieldStamp] {
                let record = try #require(try await cloud.records(user: "owner").first { $0["fields"]?["CD_id"]?["value"] == "fresh" })
                return FieldStamp.decode(record["fields"]?[MirrorBookkeeping.fieldTimesField]?["value"]?.stringValue)
            }
            let sent = try await stamps()
            let inserted = try #require(sent["CD_id"]?.time)
            #expect(sent["CD_value"]?.time == inserted && sent["CD_eventTypeRaw"]?.time == inserted)
            #expect(try #require(sent["CD_note"]?.time) > inserted)
            try await a.set(objectID, ["value": 321])
            #expect(try await a.send()["saved"] == 1)
            let resent = try await stamps()
            #expect(try #require(resent["CD_value"]?.time) > inserted)
            #expect(resent["CD_id"]?.time == inserted && resent["CD_note"] == sent["CD_note"], "untouched fields keep their stamps")
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("Scenario 34: no account / account temporarily unavailable: sends fail with notAuthenticated / accountTemporarilyUnavailable; nothing is lost")
        func scenario34() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            try await a.insertEvents(["kept"])
            _ = try await cloud.admin("admin.setAccountStatus", ["user": "owner", "status": "noAccount"])
            #expect(try await a.failure("sync.send").code == .notAuthenticated)
            _ = try await cloud.admin("admin.setAccountStatus", ["user": "owner", "status": "temporarilyUnavailable"])
            #expect(try await a.failure("sync.send").code == .accountTemporarilyUnavailable)
            #expect(try await a.pending() == 1)
            _ = try await cloud.admin("admin.setAccountStatus", ["user": "owner", "status": "available"])
            #expect(try await a.send()["saved"] == 1)
            #expect(try await cloud.records(user: "owner").count == 1)
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("Scenario 29: a paged fetch killed midway resumes from the last applied page; every record exactly once")
        func scenario29() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let total = 12000
            try await a.insertEvents((0..<total).map { String(format: "p%05d", $0) })
            try await a.send()
            let data = cloud.directory.file("b-data")
            let b = try await Device.start("B", user: "owner", cloud: cloud, dataDirectory: data)
            let socket = b.socket
            // The fetch runs on its own connection; B is killed once its first page's token is saved.
            let fetching = Task { () -> Bool in
                guard let client = try? WireClient(socketPath: socket, timeout: .seconds(120)) else { return false }
                _ = try? await client.hello(client: "fetcher")
                return (try? await client.call("sync.fetch", [:] as JSONValue)) != nil
            }
            let zoneKey = "__defaultOwner__/com.apple.coredata.cloudkit.zone"
            var sawToken = false
            for _ in 0..<600 {
                let status = try await b.status()
                let privateStore = status["stores"]?.arrayValue?.first { $0["store"] == "Private" }
                if privateStore?["zoneTokens"]?[zoneKey]?.stringValue != nil { sawToken = true; break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(sawToken)
            b.process.kill()
            _ = await fetching.value
            let restarted = try await Device.start("B", user: "owner", cloud: cloud, dataDirectory: data)
            let partial = try await restarted.objects().count
            #expect(partial > 0)
            #expect(partial < total)
            let resumed = try await restarted.fetch()
            #expect(resumed["changedRecords"]?.intValue ?? 0 <= total - partial + 1000)
            let ids = try await restarted.ids()
            #expect(ids.count == total)
            #expect(Set(ids).count == total)
            _ = await restarted.stop()
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("Scenario 30: a send whose answer was lost (applied on the server) is retried and leaves exactly one copy of each record")
        func scenario30() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["r1", "r2", "r3"])
            _ = try await cloud.admin("admin.injectFault", ["code": "serverResponseLost", "op": "records.modify", "user": "owner", "afterApplying": true])
            #expect(try await a.failure("sync.send").code == .serverResponseLost)
            #expect(try await cloud.records(user: "owner").count == 3)
            #expect(try await a.pending() == 3)
            // The next send first asks the server for the creates whose answer it lost, finds
            // them as it sent them, and applies the lost verdict: nothing is sent again.
            let retried = try await a.send()
            #expect(retried["conflictsResolved"] == 0)
            #expect(retried["requests"] == 0)
            #expect(try await a.pending() == 0)
            #expect(try await cloud.records(user: "owner").count == 3)
            try await b.fetch()
            #expect(try await b.ids() == ["r1", "r2", "r3"])
            // A later edit goes through with the tag learned from the retry: no conflict.
            let r1 = try #require(try await a.object(id: "r1")?["objectID"]?.stringValue)
            try await a.set(r1, ["note": "after the retry"])
            let edited = try await a.send()
            #expect(edited["saved"] == 1)
            #expect(edited["conflictsResolved"] == 0)
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        /// A's environment for `sendLosingTheAnswer`: killed right after the server's reply.
        static func armed(_ how: String) -> [String: String]? {
            how == "killAfterReply" ? ["MEOW_CRASH_AT": "mirror.afterServerReply:1"] : nil
        }

        /// A sends and the server applies the batch, but A never applies the answer: it is lost
        /// (`lostAnswer`), or A is killed right after it arrives and started again on its files
        /// (`killAfterReply`, with `armed`). Returns the device to go on with.
        static func sendLosingTheAnswer(_ how: String, _ a: Device, cloud: Cloud, data: String) async throws -> Device {
            if how == "lostAnswer" {
                _ = try await cloud.admin("admin.injectFault", ["code": "serverResponseLost", "op": "records.modify", "user": "owner", "afterApplying": true])
                #expect(try await a.failure("sync.send").code == .serverResponseLost)
                return a
            }
            #expect(try await a.failure("sync.send").code == .connectionClosed)
            #expect(await a.process.waitForExit() == 128 + 9)
            a.client.close()
            return try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
        }

        /// Found by `ConvergenceTests`: a delete of a record whose save the server applied but
        /// whose answer never came back was dropped as "never sent", so the record stayed in the
        /// cloud and came back to every device.
        @Test("Scenario 30, then a delete: the record whose save's answer was lost is deleted from the server too, not left behind",
              arguments: ["lostAnswer", "killAfterReply"])
        func deleteAfterALostAnswer(_ how: String) async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("a-data")
            var a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data, environment: Self.armed(how))
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["kept", "gone"])
            a = try await Self.sendLosingTheAnswer(how, a, cloud: cloud, data: data)
            #expect(try await cloud.records(user: "owner").count == 2)
            try await a.delete(try #require(try await a.object(id: "gone")?["objectID"]?.stringValue))
            let sent = try await a.send()
            #expect(sent["deleted"] == 1)
            #expect(try await a.pending() == 0)
            let left = try await cloud.records(user: "owner").compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue }
            #expect(left == ["kept"])
            try await b.fetch()
            #expect(try await b.ids() == ["kept"])
            try await a.fetch()
            #expect(try await a.ids() == ["kept"])
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        /// Found by `ConvergenceTests` (seeds 723, 823): the server applied A's create, the answer
        /// was lost, and B deleted the record before A sent again. Asked about its unanswered
        /// creates, the server no longer had the record, and A sent its create again: the
        /// record came back to every device. A now fetches first, meets the tombstone and
        /// drops both the object and its queued create. On a device that had never fetched
        /// (`fetchedBefore` false) that fetch ran from no token, which lists live records only, no
        /// deletions, and the create went out again; a send now takes Core Data's zone token
        /// before its first creates there.
        @Test("Scenario 30, then another device's delete: a create whose answer was lost is not sent again once the record was deleted",
              arguments: ["lostAnswer", "killAfterReply"], [true, false])
        func deleteByAnotherDeviceAfterALostAnswer(_ how: String, fetchedBefore: Bool) async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("a-data")
            var a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data, environment: Self.armed(how))
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let before = fetchedBefore ? ["first"] : []
            if fetchedBefore {
                try await b.insertEvents(["first"])
                try await b.send()
                try await a.fetch()
            }
            try await a.insertEvents(["kept", "gone"])
            a = try await Self.sendLosingTheAnswer(how, a, cloud: cloud, data: data)
            try await b.fetch()
            try await b.delete(try #require(try await b.object(id: "gone")?["objectID"]?.stringValue))
            #expect(try await b.send()["deleted"] == 1)
            let sent = try await a.send()
            #expect(sent["saved"] == 0, "nothing is created again: \(sent)")
            #expect(try await a.pending() == 0)
            #expect(try await a.ids() == before + ["kept"])
            let left = try await cloud.records(user: "owner").compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue }
            #expect(left.sorted() == before + ["kept"])
            try await b.fetch()
            #expect(try await b.ids() == before + ["kept"])
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        /// Found by `ConvergenceTests` (seeds 474, 723): the server applied A's create, the answer
        /// was lost, and B edited the record before A sent again. A kept the server's copy (B's
        /// tag) without applying it: A's row missed B's edit, the next fetch skipped the record
        /// (same tag), and A's next edit sent its whole stale row over B's. The copy the server
        /// has is now applied like a fetched change.
        @Test("Scenario 30, then another device's edit: the server's copy of a create whose answer was lost is merged, not just kept",
              arguments: ["lostAnswer", "killAfterReply"])
        func editByAnotherDeviceAfterALostAnswer(_ how: String) async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("a-data")
            var a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data, environment: Self.armed(how))
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["x"])
            a = try await Self.sendLosingTheAnswer(how, a, cloud: cloud, data: data)
            try await b.fetch()
            try await b.set(try #require(try await b.object(id: "x")?["objectID"]?.stringValue), ["note": "from B"])
            try await b.send()
            try await a.send()
            #expect(try await a.object(id: "x")?["values"]?["note"] == "from B")
            try await a.set(try #require(try await a.object(id: "x")?["objectID"]?.stringValue), ["value": 5])
            try await a.send()
            try await b.fetch()
            for device in [a, b] {
                let values = try await device.object(id: "x")?["values"]
                #expect(values?["note"] == "from B", "on \(device.name)")
                #expect(values?["value"]?.doubleValue == 5, "on \(device.name)")
            }
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Crash safety: the sync-service killed (kill -9) during a send; after restart both sides converge, no duplicates")
        func cloudKilledDuringSend() async throws {
            let directory = TemporaryDirectory(prefix: "mi")
            let cloud = try await Cloud.start(directory: directory, onDisk: true)
            let a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: directory.file("a-data"))
            let total = 2400
            try await a.insertEvents((0..<total).map { String(format: "k%05d", $0) })
            let (sending, watcher, partway) = try await RecoveryTests.sendUntilPartway(socket: a.socket, cloud: cloud)
            #expect(partway)
            cloud.process.kill()
            watcher.close()
            #expect(await sending.value == false)
            let back = try await Cloud.start(directory: directory, onDisk: true)
            let sent = try await a.send()
            #expect(try await a.pending() == 0)
            #expect(sent["saved"]?.intValue ?? 0 < total)
            let records = try await back.records(user: "owner")
            #expect(records.count == total)
            #expect(Set(records.compactMap { $0["recordName"]?.stringValue }).count == total)
            let b = try await Device.start("B", user: "owner", cloud: back)
            try await b.fetch()
            #expect(try await b.objects().count == total)
            _ = await a.stop()
            _ = await b.stop()
            await back.stop()
        }

        @Test("Crash safety: the store-service killed (kill -9) during a send; after restart it resends, no duplicates, no loss")
        func deviceKilledDuringSend() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("a-data")
            let a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            let total = 2400
            try await a.insertEvents((0..<total).map { String(format: "d%05d", $0) })
            let (sending, watcher, partway) = try await RecoveryTests.sendUntilPartway(socket: a.socket, cloud: cloud)
            watcher.close()
            #expect(partway)
            a.process.kill()
            _ = await sending.value
            let restarted = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            #expect(try await restarted.ids().count == total)
            try await restarted.send()
            #expect(try await restarted.pending() == 0)
            let records = try await cloud.records(user: "owner")
            #expect(records.count == total)
            #expect(Set(records.compactMap { $0["recordName"]?.stringValue }).count == total)
            _ = await restarted.stop()
            await cloud.stop()
        }

        @Test("History purged before the mirror queued it: the queue is rebuilt by comparison; edits, inserts and deletes all arrive")
        func purgedHistoryIsRecoveredByComparison() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let ids = try await a.insertEvents(["e1", "e2", "e3"])
            try await a.send()
            try await b.fetch()
            try await a.set(ids[0], ["note": "edited"])
            try await a.delete(ids[1])
            try await a.insertEvents(["e4"])
            let stores = try await a.call("store.list")
            let last = try #require(stores["stores"]?.arrayValue?.first { $0["name"] == "Private" }?["lastHistoryToken"]?.intValue)
            try await a.call("history.purge", ["store": "Private", "beforeToken": .int(last + 1)])
            let sent = try await a.send()
            #expect(sent["saved"] == 2)
            #expect(sent["deleted"] == 1)
            try await b.fetch()
            #expect(try await b.ids() == ["e1", "e3", "e4"])
            #expect(try await b.object(id: "e1")?["values"]?["note"] == "edited")
            #expect(try await a.send()["requests"] == 0)
            await ConflictTests.stop(cloud, a, b)
        }

        /// A field whose edit's history is gone is stamped with the newest purged
        /// transaction's time (the edit was made by then), one whose history survives with that
        /// history's time. A's note edit is older than B's, its value edit newer; A purges the
        /// history of the note edit only, then sends into B's record. Stamped "now", A's older
        /// note won too.
        @Test("History purged before the mirror queued it: the rebuilt edits keep their times, so a later edit elsewhere still wins")
        func purgedHistoryKeepsEditTimes() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let event = try #require(try await a.insertEvents(["e1"]).first)
            try await a.send()
            try await b.fetch()
            func lastToken() async throws -> Int {
                try #require(try await a.call("store.list")["stores"]?.arrayValue?.first { $0["name"] == "Private" }?["lastHistoryToken"]?.intValue)
            }
            try await a.set(event, ["note": "A, earlier"])
            let purgeBefore = try await lastToken() + 1
            try await b.set(try await b.objectID(id: "e1"), ["note": "B, later", "value": 90.0])
            try await b.send()
            try await a.set(event, ["value": 150.0])
            try await a.call("history.purge", ["store": "Private", "beforeToken": .int(purgeBefore)])
            let sent = try await a.send()
            #expect(sent["conflictsResolved"] == 1)
            try await b.fetch()
            for device in [a, b] {
                let values = try await device.object(id: "e1")?["values"]
                #expect(values?["note"] == "B, later", "on \(device.name): the older note won")
                #expect(values?["value"]?.doubleValue == 150, "on \(device.name): the newer value lost")
            }
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
