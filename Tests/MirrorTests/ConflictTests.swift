import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Conflicts between devices A and B of one user; real processes.
    @Suite("Mirroring: conflicts and delete versus edit", .timeLimit(.minutes(5)))
    struct ConflictTests {
        /// A and B, with `ids` created on A and fetched by B; returns (A's IDs, B's IDs) in that order.
        static func pair(_ ids: [String], aExtra: [String] = [], bExtra: [String] = []) async throws -> (Cloud, Device, Device, [String], [String]) {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: aExtra)
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: bExtra)
            let onA = try await a.insertEvents(ids)
            try await a.send()
            try await b.fetch()
            var onB: [String] = []
            for id in ids { onB.append(try #require(try await b.object(id: id)?["objectID"]?.stringValue)) }
            return (cloud, a, b, onA, onB)
        }

        static func stop(_ cloud: Cloud, _ devices: Device...) async {
            for device in devices { _ = await device.stop() }
            await cloud.stop()
        }

        static func serverFields(_ cloud: Cloud, id: String) async throws -> JSONValue? {
            try await cloud.records(user: "owner").first { $0["fields"]?["CD_id"]?["value"] == .string(id) }?["fields"]
        }

        @Test("Scenario 11: A edits one field and B another of the same record; both edits survive on A, B and the server")
        func scenario11() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e"])
            try await a.set(onA[0], ["note": "ate well"])
            try await b.set(onB[0], ["value": 250])
            try await a.send()
            let watcher = try await b.remoteChangeWatcher("b-ui")
            let sent = try await b.send()
            #expect(sent["conflictsResolved"] == 1)
            // The merge was saved on B (author sync) and B's clients were told.
            var events = watcher.events.makeAsyncIterator()
            let merged = try #require(await events.next())
            #expect(merged.name == "remoteChange")
            #expect(merged.data["author"] == "sync")
            #expect(merged.data["changedObjectIDs"] == [.string(onB[0])])
            #expect(try await b.object(id: "e")?["values"]?["note"] == "ate well")
            watcher.close()
            try await a.fetch()
            try await b.fetch()
            for device in [a, b] {
                let values = try #require(try await device.object(id: "e")?["values"])
                #expect(values["note"] == "ate well")
                #expect(values["value"]?.doubleValue == 250)
            }
            let server = try await Self.serverFields(cloud, id: "e")
            #expect(server?["CD_note"]?["value"] == "ate well")
            #expect(server?["CD_value"]?["value"]?.doubleValue == 250)
            await Self.stop(cloud, a, b)
        }

        /// Scenario 14, one order more: the client's edit lands while its conflicting send is at
        /// the server (automatic mode sends while clients save). The batch's conflict merge then
        /// sees the row with that save's values: it must also see the save's queue entry (the
        /// fields it edited, their stamps), or it takes the server's values for them and the edit
        /// is lost on every device (the automatic kill variant's seed 730). The cloud holds B's
        /// batch (a `hold` fault) while B saves.
        @Test("A save made while a conflicting send is at the server survives that send's merge")
        func saveDuringAConflictedSend() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e"])
            try await a.set(onA[0], ["value": 250])
            try await a.send()
            try await b.set(onB[0], ["note": "ate well"])
            let sent = try await cloud.whileHeld("records.modify", device: b, op: "sync.send") {
                try await b.set(onB[0], ["eventTypeRaw": "insulin"])
            }
            #expect(try sent.get()["conflictsResolved"] == 1)
            #expect(try await b.object(id: "e")?["values"]?["eventTypeRaw"] == "insulin", "the merge kept B's save made meanwhile")
            try await b.send()
            try await a.fetch()
            for device in [a, b] {
                let values = try #require(try await device.object(id: "e")?["values"])
                #expect(values["eventTypeRaw"] == "insulin", "on \(device.name)")
                #expect(values["note"] == "ate well", "on \(device.name)")
                #expect(values["value"]?.doubleValue == 250, "on \(device.name)")
            }
            #expect(try await Self.serverFields(cloud, id: "e")?["CD_eventTypeRaw"]?["value"] == "insulin")
            await Self.stop(cloud, a, b)
        }

        /// The same order with a delete: B deletes the record while its conflicting edit is at the
        /// server. The merge must not bring the deleted row back (it had no row to merge with), and
        /// the delete goes out next: the record is gone everywhere.
        @Test("A delete made while a conflicting send is at the server is not undone by that send's merge")
        func deleteDuringAConflictedSend() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e", "kept"])
            try await a.set(onA[0], ["value": 250])
            try await a.send()
            try await b.set(onB[0], ["note": "ate well"])
            let sent = try await cloud.whileHeld("records.modify", device: b, op: "sync.send") {
                try await b.delete(onB[0])
            }
            #expect(try sent.get()["conflictsResolved"] == 1)
            #expect(try await b.object(id: "e") == nil, "the merge brought the deleted row back")
            try await b.send()
            try await a.fetch()
            try await b.fetch()
            for device in [a, b] {
                #expect(try await device.ids() == ["kept"], "on \(device.name)")
            }
            #expect(try await Self.serverFields(cloud, id: "e") == nil)
            await Self.stop(cloud, a, b)
        }

        /// Scenario 14, the fetch's side: B saves while its fetch of A's edit is at the server. The
        /// fetched page merges with B's save (one field each; the same field to the later edit),
        /// and a record B deleted meanwhile stays deleted.
        @Test("Saves and a delete made while a fetch is at the server merge with the fetched page")
        func savesDuringAFetch() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e", "gone"])
            try await a.set(onA[0], ["note": "A's note", "value": 250])
            try await a.set(onA[1], ["note": "A's edit of a deleted event"])
            try await a.send()
            let fetched = try await cloud.whileHeld("changes.fetchZone", device: b, op: "sync.fetch") {
                try await b.set(onB[0], ["note": "B's later note", "eventTypeRaw": "insulin"])
                try await b.delete(onB[1])
            }
            _ = try fetched.get()
            #expect(try await b.object(id: "gone") == nil, "the fetched edit brought the deleted row back")
            try await b.send()
            try await a.fetch()
            for device in [a, b] {
                let values = try #require(try await device.object(id: "e")?["values"], "on \(device.name)")
                #expect(values["note"] == "B's later note", "on \(device.name)")
                #expect(values["eventTypeRaw"] == "insulin", "on \(device.name)")
                #expect(values["value"]?.doubleValue == 250, "on \(device.name)")
                #expect(try await device.ids() == ["e"], "on \(device.name)")
            }
            await Self.stop(cloud, a, b)
        }

        @Test("Scenario 12: A and B edit the same field; the later edit wins whichever device uploads last")
        func scenario12() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["first", "second"])
            // Record "first": A edits, then B; A uploads last. Record "second": B edits, then A; A uploads last.
            try await a.set(onA[0], ["note": "A early"])
            try await b.set(onB[0], ["note": "B late"])
            try await b.set(onB[1], ["note": "B early"])
            try await a.set(onA[1], ["note": "A late"])
            try await b.send()
            try await a.send()
            try await b.fetch()
            try await a.fetch()
            for device in [a, b] {
                #expect(try await device.object(id: "first")?["values"]?["note"] == "B late")
                #expect(try await device.object(id: "second")?["values"]?["note"] == "A late")
            }
            #expect(try await Self.serverFields(cloud, id: "first")?["CD_note"]?["value"] == "B late")
            #expect(try await Self.serverFields(cloud, id: "second")?["CD_note"]?["value"] == "A late")
            await Self.stop(cloud, a, b)
        }

        /// Found by `ConvergenceTests`: an edit back to the ancestor's value counted as no edit,
        /// so the device's latest edit lost to an earlier one (and every device converged to it).
        @Test("Scenario 12, an edit back to an earlier value: A's note set back after B cleared it is the latest edit and wins, merged at fetch or at send",
              arguments: [true, false])
        func scenario12EditBackToAnEarlierValue(mergeAtFetch: Bool) async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e"])
            try await b.set(onB[0], ["note": "re-measured"])
            try await b.send()
            try await a.fetch()
            try await a.set(onA[0], ["note": "vet said ok"])
            try await b.set(onB[0], ["note": .null])
            try await b.send()
            // A's second edit comes after B's clear, and equals the ancestor's note.
            try await a.set(onA[0], ["note": "re-measured"])
            if mergeAtFetch {
                try await a.fetch()
                #expect(try await a.object(id: "e")?["values"]?["note"] == "re-measured")
            }
            let sent = try await a.send()
            #expect(sent["saved"] == 1)
            try await b.fetch()
            for device in [a, b] {
                #expect(try await device.object(id: "e")?["values"]?["note"] == "re-measured", "on \(device.name)")
            }
            #expect(try await Self.serverFields(cloud, id: "e")?["CD_note"]?["value"] == "re-measured")
            await Self.stop(cloud, a, b)
        }

        /// Found by `ConvergenceTests`: when both sides had set the same value, the merge kept
        /// the server's earlier stamp, so an edit made between the two won on the next device.
        @Test("Scenario 12, the same value set twice: the later stamp stays with it, and an edit made between them loses")
        func scenario12SameValueSetTwice() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e"])
            try await b.set(onB[0], ["note": "x"])
            try await b.send()
            try await b.set(onB[0], ["note": "y"])
            // A has not fetched B's "x"; it sets "x" too, after B's "y".
            try await a.set(onA[0], ["note": "x"])
            try await a.send()
            try await b.send()
            try await a.fetch()
            try await b.fetch()
            for device in [a, b] {
                #expect(try await device.object(id: "e")?["values"]?["note"] == "x", "on \(device.name)")
            }
            #expect(try await Self.serverFields(cloud, id: "e")?["CD_note"]?["value"] == "x")
            await Self.stop(cloud, a, b)
        }

        @Test("Scenario 12 with --conflict-policy serverWins and clientWins: the policy decides a field both changed")
        func scenario12Policies() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e"], bExtra: ["--conflict-policy", "serverWins"])
            try await b.set(onB[0], ["note": "B late but loses"])
            try await a.set(onA[0], ["note": "A"])
            try await a.send()
            try await b.send()
            try await b.fetch()
            #expect(try await b.object(id: "e")?["values"]?["note"] == "A")
            #expect(try await Self.serverFields(cloud, id: "e")?["CD_note"]?["value"] == "A")
            await Self.stop(cloud, a, b)

            let (cloud2, c, d, onC, onD) = try await Self.pair(["e"], bExtra: ["--conflict-policy", "clientWins"])
            try await d.set(onD[0], ["note": "D early but wins"])
            try await c.set(onC[0], ["note": "C"])
            try await c.send()
            try await d.send()
            try await c.fetch()
            #expect(try await c.object(id: "e")?["values"]?["note"] == "D early but wins")
            await Self.stop(cloud2, c, d)
        }

        @Test("Scenario 13: the losing upload gets serverRecordChanged with server, client and ancestor; merged, re-queued once, converged")
        func scenario13() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e"])
            try await a.set(onA[0], ["note": "original"])
            try await a.send()
            try await b.fetch()
            try await a.set(onA[0], ["note": "from A"])
            try await b.set(onB[0], ["value": 99, "note": nil])
            try await a.send()
            let log = try await cloud.admin("admin.requestLog", [:])
            let before = log["entries"]?.arrayValue?.last?["seq"]?.intValue ?? 0
            let sent = try await b.send()
            #expect(sent["conflictsResolved"] == 1)
            #expect(sent["saved"] == 1)
            let entries = try await cloud.admin("admin.requestLog", ["after": .int(before)])["entries"]?.arrayValue ?? []
            let modifies = entries.filter { $0["op"] == "records.modify" }.map { $0["code"]?.stringValue ?? "" }
            // One refused upload, one re-send of the merge: re-queued exactly once.
            #expect(modifies == ["partialFailure", "ok"])
            #expect(try await b.pending() == 0)
            try await a.fetch()
            // Both edited note; the later edit wins, and B's nil is an edit.
            for device in [a, b] {
                let values = try #require(try await device.object(id: "e")?["values"])
                #expect(values["value"]?.doubleValue == 99)
                #expect(values["note"] == .null)
            }
            await Self.stop(cloud, a, b)
        }

        @Test("Scenario 15: an atomic batch with one conflicting edit and one new record: both re-queued and later saved")
        func scenario15() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["e"])
            try await a.set(onA[0], ["note": "A"])
            try await a.send()
            try await b.set(onB[0], ["value": 7])
            try await b.insertEvents(["new-on-B"])
            let log = try await cloud.admin("admin.requestLog", [:])
            let before = log["entries"]?.arrayValue?.last?["seq"]?.intValue ?? 0
            let sent = try await b.send()
            #expect(sent["saved"] == 2)
            let entries = try await cloud.admin("admin.requestLog", ["after": .int(before)])["entries"]?.arrayValue ?? []
            #expect(entries.filter { $0["op"] == "records.modify" }.map { $0["code"]?.stringValue ?? "" } == ["partialFailure", "ok"])
            let records = try await cloud.records(user: "owner")
            #expect(records.count == 2)
            #expect(try await Self.serverFields(cloud, id: "e")?["CD_note"]?["value"] == "A")
            #expect(try await Self.serverFields(cloud, id: "e")?["CD_value"]?["value"]?.doubleValue == 7)
            await Self.stop(cloud, a, b)
        }

        /// Inserts a CareEvent with a chosen uuid (the same logical object on two devices).
        static func insert(on device: Device, uuid: String, id: String, note: String) async throws {
            let context = try await device.context()
            _ = try await device.call("object.insert", ["context": .string(context), "entity": "CareEvent", "uuid": .string(uuid),
                                                        "values": Device.eventValues(id, note: note)])
            _ = try await device.call("context.save", ["context": .string(context)])
        }

        @Test("Scenario 16: a new record whose name exists on the server gets serverRejectedRequest; the client merges")
        func scenario16() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            // B holds the zone's token, so its send goes out without fetching first (a device
            // without one fetches before its first create, and would merge A's record there).
            try await a.insertEvents(["before"])
            try await a.send()
            try await b.fetch()
            let uuid = UUID().uuidString
            try await Self.insert(on: a, uuid: uuid, id: "same", note: "A's")
            try await Self.insert(on: b, uuid: uuid, id: "same", note: "B's")
            try await a.send()
            let owner = try await cloud.connect("owner-secret")
            // What B's send will meet: the server's answer to a new record with a taken name.
            do {
                _ = try await owner.call("records.modify", ["database": "private", "saves": [["recordName": .string(uuid), "recordType": "CD_CareEvent",
                                                                                              "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"], "fields": [:]]]])
                Issue.record("a new record with a taken name was accepted")
            } catch {
                #expect(error.details["partialErrors"]?[uuid]?["code"] == "serverRejectedRequest")
            }
            owner.close()
            let sent = try await b.send()
            #expect(sent["conflictsResolved"] == 1)
            try await a.fetch()
            // B's note is the later edit.
            #expect(try await a.object(id: "same")?["values"]?["note"] == "B's")
            #expect(try await b.object(id: "same")?["values"]?["note"] == "B's")
            await Self.stop(cloud, a, b)
        }

        @Test("Scenario 17: A and B create the same logical object offline; after sync there is exactly one record")
        func scenario17() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let uuid = UUID().uuidString
            try await Self.insert(on: a, uuid: uuid, id: "daily", note: "from A")
            try await Self.insert(on: b, uuid: uuid, id: "daily", note: "from B")
            try await a.now()
            try await b.now()
            try await a.now()
            #expect(try await cloud.records(user: "owner").count == 1)
            #expect(try await a.objects().count == 1)
            #expect(try await b.objects().count == 1)
            #expect(try await a.object(id: "daily")?["values"]?["note"] == (try await b.object(id: "daily")?["values"]?["note"]))
            #expect(try await a.pending() == 0)
            #expect(try await b.pending() == 0)
            await Self.stop(cloud, a, b)
        }

        @Test("Scenario 19: A deletes while an offline B edits; B's send gets unknownItem; delete wins by default, resurrect on request")
        func scenario19() async throws {
            let (cloud, a, b, onA, onB) = try await Self.pair(["doomed"])
            try await a.delete(onA[0])
            try await a.send()
            try await b.set(onB[0], ["note": "edited offline"])
            let sent = try await b.send()
            #expect(sent["saved"] == 0)
            #expect(try await b.object(id: "doomed") == nil)
            #expect(try await b.pending() == 0)
            #expect(try await cloud.records(user: "owner").isEmpty)
            await Self.stop(cloud, a, b)

            let (cloud2, c, d, onC, onD) = try await Self.pair(["phoenix"], bExtra: ["--delete-policy", "CareEvent=resurrect"])
            try await c.delete(onC[0])
            try await c.send()
            try await d.set(onD[0], ["note": "edited offline"])
            let resent = try await d.send()
            #expect(resent["saved"] == 1)
            try await c.fetch()
            #expect(try await c.object(id: "phoenix")?["values"]?["note"] == "edited offline")
            #expect(try await cloud2.records(user: "owner").count == 1)
            await Self.stop(cloud2, c, d)
        }
    }
}
