import CloudWire
import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// Scenarios 5, 14, 32, 33, 35 and 43; real processes.
    @Suite("Mirroring: moves, orderings, outages, quotas, accounts", .timeLimit(.minutes(5)))
    struct MoreScenarioTests {
        @Test("Scenario 5: moving a CareEvent from a private session to a shared one is a delete in the private zone plus a create in the share zone")
        func scenario5() async throws {
            let setup = try await SharingTests.shared("readOnly")
            let privateSession = try await setup.o.insertSession("other")
            let moved = try #require(try await setup.o.insertEvents(["wanderer"], session: privateSession).first)
            try await setup.o.send()
            #expect(try await setup.cloud.records(user: "owner").contains { $0["fields"]?["CD_id"]?["value"] == "wanderer" })
            let shared = try #require(try await setup.o.object(id: "mochi", entity: "CareSession")?["objectID"]?.stringValue)
            try await setup.o.set(moved, ["session": .string(shared)])
            // Locally no store changes: the object keeps its ID in the private store.
            #expect(try await setup.o.object(id: "wanderer")?["objectID"] == .string(moved))
            let sent = try await setup.o.send()
            #expect(sent["saved"] == 1)
            #expect(try await setup.cloud.records(user: "owner").contains { $0["fields"]?["CD_id"]?["value"] == "wanderer" } == false)
            let inShare = try await setup.cloud.records(user: "owner", zone: setup.zone)
            #expect(inShare.contains { $0["fields"]?["CD_id"]?["value"] == "wanderer" && $0["fields"]?["CD_session"]?["value"] == .string(setup.sessionUUID) })
            try await setup.p.fetch()
            #expect(try await setup.p.object(id: "wanderer")?["store"] == "Shared")
            await setup.stop()
        }

        @Test("Scenario 14: every order of server edit, client edit and fetch gives the same per-field result")
        func scenario14() async throws {
            let (cloud, a, b, onA, onB) = try await ConflictTests.pair(["order1", "order2", "order3"])
            // In every order A edits note and value first, B edits note later: note is B's, value is A's.
            // Order 1: A edits and sends, B edits, B fetches (merged at fetch), B sends.
            try await a.set(onA[0], ["note": "A", "value": 1])
            try await a.send()
            try await b.set(onB[0], ["note": "B"])
            try await b.fetch()
            try await b.send()
            // Order 2: A edits, B edits, A sends, B sends (serverRecordChanged).
            try await a.set(onA[1], ["note": "A", "value": 1])
            try await b.set(onB[1], ["note": "B"])
            try await a.send()
            try await b.send()
            // Order 3: A edits, A sends, B edits, B sends (conflict), B fetches.
            try await a.set(onA[2], ["note": "A", "value": 1])
            try await a.send()
            try await b.set(onB[2], ["note": "B"])
            try await b.send()
            try await b.fetch()
            try await a.fetch()
            for device in [a, b] {
                for id in ["order1", "order2", "order3"] {
                    let values = try #require(try await device.object(id: id)?["values"])
                    #expect(values["note"] == "B", "\(device.name) \(id)")
                    #expect(values["value"]?.doubleValue == 1, "\(device.name) \(id)")
                }
            }
            for id in ["order1", "order2", "order3"] {
                #expect(try await ConflictTests.serverFields(cloud, id: id)?["CD_note"]?["value"] == "B")
            }
            await ConflictTests.stop(cloud, a, b)
        }

        @Test("Scenario 32: the sync-service unreachable for many cycles: pending changes intact, nothing given up")
        func scenario32() async throws {
            let directory = TemporaryDirectory(prefix: "mi")
            let cloud = try await Cloud.start(directory: directory, onDisk: true)
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            try await a.insertEvents(["one"])
            try await a.send()
            await cloud.stop()
            try await a.insertEvents(["two", "three"])
            for _ in 0..<8 {
                let error = try await a.failure("sync.now")
                #expect([ErrorCode.networkUnavailable, .connectionClosed].contains(error.code))
                #expect(try await a.pending() == 2)
            }
            let back = try await Cloud.start(directory: directory, onDisk: true)
            #expect(try await a.send()["saved"] == 2)
            #expect(try await back.records(user: "owner").count == 3)
            _ = await a.stop()
            await back.stop()
        }

        @Test("Scenario 33: quotaExceeded keeps the change pending, reports it, and the next send retries it")
        func scenario33() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            try await a.insertEvents(["big"])
            _ = try await cloud.admin("admin.injectFault", ["code": "quotaExceeded", "op": "records.modify", "user": "owner"])
            #expect(try await a.failure("sync.send").code == .quotaExceeded)
            let status = try await a.status()
            #expect(status["lastError"]?["code"] == "quotaExceeded")
            #expect(try await a.pending() == 1)
            #expect(try await a.send()["saved"] == 1)
            #expect(try await a.pending() == 0)
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("Scenario 35: an account switch clears local data and tokens; signing in uploads existing local rows once")
        func scenario35() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("a-data")
            // Rows made before the device ever synced are uploaded once at the first sign-in.
            let offline = try await MeowProcess.start("store-service", ["--socket", cloud.directory.file("x.sock"), "--data-dir", data, "--no-orphan-repair"])
            let client = try WireClient(socketPath: cloud.directory.file("x.sock"))
            try await client.hello(client: "offline")
            let context = try #require(try await client.call("context.open", [:])["context"])
            _ = try await client.call("object.insert", ["context": context, "entity": "CareEvent", "values": Device.eventValues("before-sync")])
            _ = try await client.call("context.save", ["context": context])
            client.close()
            _ = await offline.stop()

            let a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            #expect(try await a.send()["saved"] == 1)
            #expect(try await a.send()["requests"] == 0)
            #expect(try await cloud.records(user: "owner").count == 1)
            _ = await a.stop()

            // The same device signs in as bob: owner's data leaves the device; nothing reaches bob's cloud.
            let switched = try await Device.start("A", user: "bob", cloud: cloud, dataDirectory: data)
            let now = try await switched.now()
            #expect(now["send"]?["requests"] == 0)
            #expect(try await switched.objects().isEmpty)
            #expect(try await switched.status()["user"] == "bob")
            #expect(try await cloud.records(user: "owner").count == 1)
            _ = await switched.stop()
            await cloud.stop()
        }

        @Test("Scenario 35: sign-out removes the account's data and stops syncing (across a restart); saves made meanwhile are uploaded after sign-in, the cloud's data comes back")
        func scenario35SignOut() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("a-data")
            var a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["synced"])
            #expect(try await a.send()["saved"] == 1)

            let out = try await a.call("account.signOut")
            #expect(out["signedIn"] == false)
            #expect(out["objectsRemoved"] == 1)
            #expect(try await a.objects().isEmpty)
            #expect(try await a.status()["signedIn"] == false)
            #expect(try await a.failure("sync.send").code == .notAuthenticated)
            // The cloud keeps the account's data; nothing was deleted there.
            #expect(try await cloud.records(user: "owner").count == 1)

            // Local saves keep working while signed out, and the sign-out survives a restart.
            try await a.insertEvents(["offline"])
            _ = await a.stop()
            a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data)
            #expect(try await a.status()["signedIn"] == false)
            #expect(try await a.failure("sync.now").code == .notAuthenticated)

            // A refused credential leaves the device signed out.
            #expect(try await a.failure("account.signIn", ["credential": "wrong"]).code == .notAuthenticated)
            #expect(try await a.status()["signedIn"] == false)

            let signedIn = try await a.call("account.signIn")
            #expect(signedIn["user"] == "owner")
            let synced = try await a.now()
            #expect(synced["send"]?["saved"] == 1)
            #expect(try await a.ids().sorted() == ["offline", "synced"])
            try await b.fetch()
            #expect(try await b.ids().sorted() == ["offline", "synced"])
            #expect(try await cloud.records(user: "owner").count == 2)
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 43: sharing a session right after one of its events was saved gives no spurious conflict")
        func scenario43() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let session = try await o.insertSession("mochi")
            try await o.insertEvents(["e1"], session: session)
            try await o.send()
            try await o.insertEvents(["e2"], session: session)
            let created = try await o.call("share.create", ["objectID": .string(session)])
            #expect(created["movedRecords"] == 3)
            try await o.set(session, ["title": "Mochi (shared)"])
            let sent = try await o.send()
            #expect(sent["saved"] == 1)
            #expect(sent["conflictsResolved"] == 0)
            let zone: JSONValue = ["zoneName": try #require(created["zoneName"])]
            let records = try await cloud.records(user: "owner", zone: zone)
            #expect(records.first { $0["recordType"] == "CD_CareSession" }?["fields"]?["CD_title"]?["value"] == "Mochi (shared)")
            #expect(records.filter { $0["recordType"] == "CD_CareEvent" }.count == 2)
            _ = await o.stop()
            await cloud.stop()
        }

        @Test("Scenario 22: deleting a session with its events sends the events with the session, in one request")
        func scenario22() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let session = try await a.insertSession("mochi")
            try await a.insertEvents(["e1", "e2"], session: session)
            try await a.send()
            try await b.fetch()
            try await a.delete(session)
            let seq = try await RecoveryTests.lastLogSeq(cloud)
            let sent = try await a.send()
            #expect(sent["deleted"] == 3)
            #expect(try await RecoveryTests.modifyCodes(cloud, after: seq) == ["ok"])
            #expect(try await cloud.records(user: "owner").isEmpty)
            try await b.fetch()
            #expect(try await b.objects().isEmpty)
            #expect(try await b.objects("CareSession").isEmpty)
            // The server's rule for parent references (which the mirror never writes, as Core Data
            // stores relationships as record names): a parent deleted alone is refused.
            let owner = try await cloud.connect("owner-secret")
            let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
            _ = try await owner.call("records.modify", ["database": "private", "saves": [
                ["recordName": "S", "recordType": "CD_CareSession", "zoneID": zone, "fields": [:]],
                ["recordName": "E", "recordType": "CD_CareEvent", "zoneID": zone, "fields": [:], "parent": ["recordName": "S"]]]])
            do {
                _ = try await owner.call("records.modify", ["database": "private", "deletes": [["recordName": "S", "zoneID": zone]]])
                Issue.record("a parent deleted alone was accepted")
            } catch {
                #expect(error.details["partialErrors"]?["S"]?["code"] == "referenceViolation")
            }
            owner.close()
            await ConflictTests.stop(cloud, a, b)
        }

        @Test("Scenario 23: A moves an event into a session B deletes; the delete rule (cascade) is applied and every copy converges")
        func scenario23() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let home = try await a.insertSession("home")
            let target = try await a.insertSession("target")
            let event = try #require(try await a.insertEvents(["mover"], session: home).first)
            try await a.send()
            try await b.fetch()
            try await a.set(event, ["session": .string(target)])
            let targetOnB = try #require(try await b.object(id: "target", entity: "CareSession")?["objectID"]?.stringValue)
            try await b.delete(targetOnB)
            try await b.send()
            try await a.send()
            // A learns the session is gone: its cascade removes the event it moved there, and that
            // delete goes to the cloud too.
            try await a.fetch()
            #expect(try await a.object(id: "mover") == nil)
            #expect(try await a.send()["deleted"] == 1)
            try await b.fetch()
            for device in [a, b] {
                #expect(try await device.objects().isEmpty)
                #expect(try await device.objects("CareSession").compactMap { $0["values"]?["id"]?.stringValue } == ["home"])
            }
            #expect(try await cloud.records(user: "owner").compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue } == ["home"])
            await ConflictTests.stop(cloud, a, b)
        }

        /// Scenario 23 with the order reversed and made exact: B logs an event into a session
        /// while its fetch of A's delete of that session is held at the server. Applying the
        /// delete cascades to the new event (never sent: its create is dropped), so no event is
        /// left pointing at a session that no longer exists, here or in the cloud.
        @Test("Scenario 23, during a fetch: an event logged into a session whose delete is being fetched goes with it")
        func scenario23DuringAFetch() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let session = try await a.insertSession("doomed")
            try await a.insertEvents(["old"], session: session)
            try await a.send()
            try await b.fetch()
            let sessionOnB = try #require(try await b.object(id: "doomed", entity: "CareSession")?["objectID"]?.stringValue)
            try await a.delete(session)
            try await a.send()
            let fetched = try await cloud.whileHeld("changes.fetchZone", device: b, op: "sync.fetch") {
                try await b.insertEvents(["late"], session: sessionOnB)
            }
            _ = try fetched.get()
            try await b.send()
            try await a.fetch()
            try await b.fetch()
            for device in [a, b] {
                #expect(try await device.objects("CareSession").isEmpty, "on \(device.name)")
                #expect(try await device.ids() == [], "on \(device.name)")
            }
            #expect(try await cloud.records(user: "owner").isEmpty)
            #expect(try await b.pending() == 0)
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
