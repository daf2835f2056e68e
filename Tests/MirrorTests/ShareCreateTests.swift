import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// share.create on sessions larger than one request: the root moves with the share, the
    /// rest of the graph follows it by the send's moves, in batches within the server's limits.
    /// (A graph that fits one request moves in one: `SharingTests`.)
    @Suite("Mirroring: share.create in batches", .timeLimit(.minutes(5)))
    struct ShareCreateTests {
        /// A month of readings is more than one `records.modify` may carry (400 items; a move
        /// is a save and a delete). Moving the whole graph in one request was `limitExceeded`,
        /// and such a session could not be shared at all.
        @Test("A session with more records than one request may carry is shared, and the participant receives all of it")
        func largeSessionIsSharedInBatches() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let p = try await Device.start("P", user: "alice", cloud: cloud)
            let session = try await o.insertSession("mochi")
            let ids = (0..<250).map { String(format: "bg-%03d", $0) }
            try await o.insertEvents(ids, session: session)
            try await o.send()
            let created = try await o.call("share.create", ["objectID": .string(session),
                                                            "participants": [["user": "alice", "permission": "readOnly"]]])
            #expect(created["movedRecords"] == 251)
            #expect(created["pendingRecords"] == 0)
            #expect(created["sendError"] == nil)
            let zoneName = try #require(created["zoneName"]?.stringValue)
            #expect(try await cloud.records(user: "owner").isEmpty, "a record was left in the private zone")
            #expect(try await cloud.eventIDs(zoneName: zoneName) == ids)
            // Each moved copy names the copy it was moved from (its move receipt, `CD_moveReceipt`).
            let moved = try await cloud.records(user: "owner", zone: ["zoneName": .string(zoneName)]).filter { $0["recordType"] == "CD_CareEvent" }
            #expect(moved.allSatisfy { $0["fields"]?["CD_moveReceipt"] != nil })
            #expect(try await o.pending() == 0)
            _ = try await p.call("share.accept", ["zoneName": .string(zoneName), "ownerName": "owner"])
            #expect(try await p.ids(store: "Shared") == ids)
            #expect(try await o.ids(store: "Private") == ids)
            // The move receipt is bookkeeping, not data: the convergence check (meowctl diff,
            // the same comparison as assertConverged) finds both devices equal to the cloud.
            for (device, user) in [(o, "owner"), (p, "alice")] {
                let diff = try await MeowProcess.run("meowctl", ["diff", "--socket", device.socket, "--cloud", cloud.socket, "--credential", "\(user)-secret", "--json"])
                #expect(diff.status == 0, "\(device.name): \(diff.stdout)")
            }
            // The first ordinary save of a moved record drops the move's field (sent as null:
            // the server keeps a key a save leaves out); the others keep theirs.
            try await o.set(try await o.objectID(id: "bg-000"), ["value": 99])
            try await o.send()
            let after = try await cloud.records(user: "owner", zone: ["zoneName": .string(zoneName)]).filter { $0["recordType"] == "CD_CareEvent" }
            #expect(after.first { $0["fields"]?["CD_id"]?["value"] == "bg-000" }?["fields"]?["CD_moveReceipt"] == nil)
            #expect(after.first { $0["fields"]?["CD_id"]?["value"] == "bg-001" }?["fields"]?["CD_moveReceipt"] != nil)
            await ConflictTests.stop(cloud, o, p)
        }

        /// A server whose limit is below the device's batch size refuses the one-request move
        /// (`limitExceeded`, nothing applied): share.create moves the root alone, and the send
        /// that moves the rest learns the limit as any send does (halving its batches).
        @Test("A graph over a lower server limit than the device assumed is shared root first, the rest in smaller batches")
        func graphOverALowerServerLimitFallsBackToBatches() async throws {
            let cloud = try await Cloud.start()
            _ = try await cloud.admin("admin.setLimits", ["maxItemsPerRequest": 10])
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let session = try await o.insertSession("mochi")
            let ids = (1...8).map { "bg-\($0)" }
            try await o.insertEvents(ids, session: session)
            try await o.send()
            let created = try await o.call("share.create", ["objectID": .string(session)])
            #expect(created["movedRecords"] == 9)
            #expect(created["pendingRecords"] == 0)
            let zoneName = try #require(created["zoneName"]?.stringValue)
            #expect(try await cloud.records(user: "owner").isEmpty, "a record was left in the private zone")
            #expect(try await cloud.eventIDs(zoneName: zoneName) == ids.sorted())
            #expect(try await o.pending() == 0)
            await ConflictTests.stop(cloud, o)
        }

        /// `--batch-size` makes a small session take the large session's path: with 9-item
        /// batches a graph of 9 records (18 items moving, the share one more) moves its root
        /// first; the events follow in requests of their own, one of which the cloud refuses.
        @Test("A device's smaller batch size moves a small session root first, as a large one")
        func smallBatchSizeMovesASmallSessionRootFirst() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--batch-size", "9"])
            #expect(try await o.status()["batchLimit"] == 9)
            let session = try await o.insertSession("mochi")
            let ids = (1...8).map { "bg-\($0)" }
            try await o.insertEvents(ids, session: session)
            try await o.send()
            _ = try await cloud.admin("admin.injectFault", ["op": "records.modify", "recordType": "CD_CareEvent", "code": "serviceUnavailable",
                                                            "retryAfterSeconds": 0, "count": 1])
            let created = try await o.call("share.create", ["objectID": .string(session)])
            #expect(created["movedRecords"] == 1)
            #expect(created["pendingRecords"] == 8)
            let zoneName = try #require(created["zoneName"]?.stringValue)
            try await o.send()
            #expect(try await cloud.records(user: "owner").isEmpty, "a record was left in the private zone")
            #expect(try await cloud.eventIDs(zoneName: zoneName) == ids.sorted())
            #expect(try await o.pending() == 0)
            await ConflictTests.stop(cloud, o)
        }

        @Test("share.stop of a zone that is not a share of this device answers the cloud's reason for it, naming the zone")
        func stoppingAnUnknownShareSaysWhy() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let error = try await o.failure("share.stop", ["zoneName": "no-such-share"])
            #expect(error.code == "zoneNotFound")
            #expect(error.message.hasPrefix("share.stop: "))
            #expect(error.message.contains("zone 'no-such-share'"))
            await ConflictTests.stop(cloud, o)
        }

        /// The share exists once the root has moved; a cloud error while the rest follows does
        /// not undo it. share.create answers what moved and what is still queued, with the
        /// error, and the next send moves the rest.
        @Test("When the cloud stops the graph's move, share.create answers what is left, and the next send moves it")
        func interruptedMoveIsFinishedByTheNextSend() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let p = try await Device.start("P", user: "alice", cloud: cloud)
            let session = try await o.insertSession("mochi")
            // Over one request (200 moves and the root's, with the share): the root moves first.
            let ids = (0..<200).map { String(format: "bg-%03d", $0) }
            try await o.insertEvents(ids, session: session)
            try await o.send()
            // share.create's own requests save the session and the share; the first one saving an event is the members' move.
            _ = try await cloud.admin("admin.injectFault", ["op": "records.modify", "recordType": "CD_CareEvent", "code": "serviceUnavailable",
                                                            "retryAfterSeconds": 0, "count": 1])
            let created = try await o.call("share.create", ["objectID": .string(session),
                                                            "participants": [["user": "alice", "permission": "readWrite"]]])
            #expect(created["movedRecords"] == 1)
            #expect(created["pendingRecords"] == 200)
            #expect(created["sendError"]?["code"] == "serviceUnavailable")
            let zoneName = try #require(created["zoneName"]?.stringValue)
            #expect(try await cloud.eventIDs(zoneName: "com.apple.coredata.cloudkit.zone") == ids)
            #expect(try await cloud.eventIDs(zoneName: zoneName).isEmpty)
            #expect(try await o.pending() == 200)
            // Sharing again is refused: the share exists.
            #expect(try await o.failure("share.create", ["objectID": .string(session)]).code == "alreadyShared")
            try await o.send()
            #expect(try await cloud.records(user: "owner").isEmpty, "a record was left in the private zone")
            #expect(try await cloud.eventIDs(zoneName: zoneName) == ids)
            #expect(try await o.pending() == 0)
            _ = try await p.call("share.accept", ["zoneName": .string(zoneName), "ownerName": "owner"])
            #expect(try await p.ids(store: "Shared") == ids)
            await ConflictTests.stop(cloud, o, p)
        }
    }
}
