import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Devices A and B of one user (owner) and one sync-service, all real processes.
    @Suite("Mirroring: basic sync of one user", .timeLimit(.minutes(5)))
    struct BasicSyncTests {
        @Test("Scenario 1: a new CareEvent with no store lands in the private store and the private database's Core Data zone")
        func scenario1() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let saved = try await a.insertEvents(["e1"])
            let object = try #require(try await a.object(id: "e1"))
            #expect(object["store"] == "Private")
            let report = try await a.send()
            #expect(report["saved"] == 1)
            let records = try await cloud.records(user: "owner")
            #expect(records.count == 1)
            #expect(records.first?["recordType"] == "CD_CareEvent")
            #expect(records.first?["recordName"] == object["uuid"])
            #expect(records.first?["fields"]?["CD_id"]?["value"] == "e1")
            #expect(records.first?["fields"]?["CD_entityName"]?["value"] == "CareEvent")
            #expect(records.first?["zoneID"]?["zoneName"] == "com.apple.coredata.cloudkit.zone")
            // Nothing in the shared database.
            let owner = try await cloud.connect("owner-secret")
            let shared = try await owner.call("zones.fetch", ["database": "shared"])
            #expect(shared["zones"]?.arrayValue?.isEmpty == true)
            owner.close()
            #expect(saved.count == 1)
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("Scenario 7: A creates 1, 10 and 444 CareEvents and sends; B fetches exactly them; A has nothing pending")
        func scenario7() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            var expected: [String] = []
            for (round, count) in [1, 10, 444].enumerated() {
                let ids = (0..<count).map { String(format: "r%d-e%04d", round, $0) }
                try await a.insertEvents(ids)
                expected += ids
                let sent = try await a.send()
                #expect(sent["saved"]?.intValue == count)
                #expect(try await a.pending() == 0)
                try await b.fetch()
                #expect(try await b.ids() == expected.sorted())
            }
            #expect(try await a.status()["quiescent"] == true)
            // The same set, field for field.
            let onA = try await a.objects().map { $0["values"] }
            let onB = try await b.objects().map { $0["values"] }
            #expect(onA.count == 455)
            #expect(onA.map { $0?["value"] } == onB.map { $0?["value"] })
            #expect(onA.map { $0?["occurredAt"] } == onB.map { $0?["occurredAt"] })
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Every kind of value arrives on B exactly as A saved it: escapes, non-ASCII text, fractions, exponents, dates, booleans, relationships")
        func valuesArriveExactly() async throws {
            // B reads a fetched record's values straight from the fields' text (no JSON tree is
            // made of them): every escape and number form the cloud writes must read back.
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let context = try await a.context()
            let session = try #require(try await a.call("object.insert", ["context": .string(context), "entity": "CareSession", "values": [
                "id": "s1", "title": "Mochi \"the cat\" \\ 🐱", "isDefault": true, "createdAt": "2026-07-27T09:00:00.125Z"]])["objectID"]?.stringValue)
            let notes = ["quote \" backslash \\ slash /", "lines\nand\ttabs\r", "control \u{01}\u{1F} and \u{0} chars", "猫 é ü 🐈‍⬛", ""]
            let values: [Double] = [2.5, -0.125, 1e-7, 123456789.25, 1e21, 0]
            var objects: [JSONValue] = []
            for (index, value) in values.enumerated() {
                var fields: [String: JSONValue] = ["id": .string("v\(index)"), "eventTypeRaw": "insulin", "occurredAt": "2026-07-27T09:00:00.987Z",
                                                   "updatedAt": "1969-12-31T23:59:59.5Z", "value": .double(value), "session": .string(session)]
                if index < notes.count { fields["note"] = .string(notes[index]) }
                objects.append(["entity": "CareEvent", "values": .object(fields)])
            }
            _ = try await a.call("object.insert", ["context": .string(context), "objects": .array(objects)])
            _ = try await a.call("context.save", ["context": .string(context)])
            #expect(try await a.send()["saved"] == 7)
            try await b.fetch()
            let onA = try await a.objects().map { $0["values"] ?? .null }
            let onB = try await b.objects().map { $0["values"] ?? .null }
            #expect(onA.count == 6)
            for (left, right) in zip(onA, onB) {
                for key in ["id", "eventTypeRaw", "occurredAt", "updatedAt", "value", "note"] {
                    #expect(left[key] == right[key], "\(key): \(String(describing: left[key])) on A, \(String(describing: right[key])) on B")
                }
            }
            #expect(onB.map { $0["note"] ?? .null } == notes.map { JSONValue.string($0) } + [.null])
            let sessionOnB = try #require(try await b.object(id: "s1", entity: "CareSession"))
            #expect(sessionOnB["values"]?["title"] == "Mochi \"the cat\" \\ 🐱")
            #expect(sessionOnB["values"]?["isDefault"] == true)
            #expect(sessionOnB["values"]?["createdAt"] == (try await a.object(id: "s1", entity: "CareSession"))?["values"]?["createdAt"])
            let eventsOnB = try await b.objects(predicate: "session.id == 's1'")
            #expect(eventsOnB.count == 6, "every event points at the session on B")
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 9: a rename on A reaches B, B's rename reaches A; both show the latest value")
        func scenario9() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let session = try await a.insertSession("s1", title: "Mochi")
            try await a.send()
            try await b.fetch()
            let onB = try #require(try await b.object(id: "s1", entity: "CareSession"))
            #expect(onB["values"]?["title"] == "Mochi")

            try await a.set(session, ["title": "Mochi the cat"])
            try await a.send()
            try await b.fetch()
            #expect(try await b.object(id: "s1", entity: "CareSession")?["values"]?["title"] == "Mochi the cat")

            try await b.set(try #require(onB["objectID"]?.stringValue), ["title": "Sir Mochi"])
            try await b.send()
            try await a.fetch()
            #expect(try await a.object(id: "s1", entity: "CareSession")?["values"]?["title"] == "Sir Mochi")
            #expect(try await b.object(id: "s1", entity: "CareSession")?["values"]?["title"] == "Sir Mochi")
            #expect(try await a.pending() == 0)
            #expect(try await b.pending() == 0)
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 10: A deletes a record; after B fetches it is gone on B, applied once")
        func scenario10() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let ids = try await a.insertEvents(["keep", "gone"])
            try await a.send()
            try await b.fetch()
            #expect(try await b.ids() == ["gone", "keep"])
            try await a.delete(ids[1])
            let sent = try await a.send()
            #expect(sent["deleted"] == 1)
            #expect(try await cloud.records(user: "owner").count == 1)
            let first = try await b.fetch()
            #expect(first["deletedRecords"] == 1)
            #expect(try await b.ids() == ["keep"])
            let second = try await b.fetch()
            #expect(second["deletedRecords"] == 0)
            // One delete transaction on B, by the mirror.
            let history = try await b.call("history.fetch", ["store": "Private"])
            let deletes = (history["transactions"]?.arrayValue ?? []).flatMap { transaction in
                (transaction["changes"]?.arrayValue ?? []).filter { $0["kind"] == "delete" }.map { _ in transaction["author"] }
            }
            #expect(deletes == ["sync"])
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Scenario 21: a pending save whose local row no longer exists is dropped; nothing is uploaded")
        func scenario21() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let ids = try await a.insertEvents(["ghost"])
            try await a.delete(ids[0])
            #expect(try await a.status()["quiescent"] == false)
            let sent = try await a.send()
            #expect(sent["saved"] == 0)
            #expect(sent["requests"] == 0)
            #expect(sent["dropped"]?.intValue ?? 0 >= 1)
            #expect(try await a.pending() == 0)
            let owner = try await cloud.connect("owner-secret")
            let zones = try await owner.call("zones.fetch", ["database": "private"])
            // No request was made, so not even the Core Data zone exists yet.
            #expect(zones["zones"]?.arrayValue?.count == 1)
            owner.close()
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("A send builds its batches from one read of the queue: entries with nothing to send between them are dropped once, every record goes once")
        func batchesFromOneRead() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let ids = try await a.insertEvents((0..<1_000).map { "e\($0)" })
            // Deleted before any send: their queued inserts become deletes of records the server
            // never had, read among the others, at and around the batches' boundaries (400 a batch).
            let gone = [0, 399, 400, 401, 799, 800, 999]
            for index in gone { try await a.delete(ids[index]) }
            let sent = try await a.send()
            #expect(sent["saved"] == .int(1_000 - gone.count))
            #expect(sent["dropped"] == .int(gone.count))
            #expect(sent["requests"] == 3)
            #expect(try await a.pending() == 0)
            let names = try await cloud.records(user: "owner").compactMap { $0["recordName"]?.stringValue }
            #expect(names.count == 1_000 - gone.count)
            #expect(Set(names).count == names.count)
            // Nothing left to send: a second send makes no request.
            #expect(try await a.send()["requests"] == 0)
            _ = await a.stop()
            await cloud.stop()
        }

        /// A bulk save's new objects are queued a run at a time (one statement per run of one
        /// entity with the same fields and stamp): the queue must still follow the history's
        /// order, or a child could go out before its parent. One item a request, so each record
        /// is written in the order it was sent.
        @Test("One save's new objects of two entities, an edit and a delete are sent in the history's order, a record a request")
        func newObjectRunsKeepHistoryOrder() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--batch-size", "1"])
            let first = try await a.insertSession("first")
            let earlier = try await a.insertEvents(["edited", "deleted"], session: first)
            try await a.send()
            let context = try await a.context()
            func insert(_ entity: String, _ values: JSONValue) async throws -> String {
                try #require(try await a.call("object.insert", ["context": .string(context), "entity": .string(entity), "values": values])["objectID"]?.stringValue)
            }
            // A note on the first event only: its fields differ from the second's, so the two are
            // separate runs; the session starts a run of another entity; the last event is in it.
            _ = try await insert("CareEvent", Device.eventValues("x1", note: "first", session: first))
            _ = try await insert("CareEvent", Device.eventValues("x2", session: first))
            let second = try await insert("CareSession", ["id": "second", "title": "Tama"])
            _ = try await insert("CareEvent", Device.eventValues("y1", session: second))
            try await a.call("object.set", ["context": .string(context), "objectID": .string(earlier[0]), "values": ["note": "later"]])
            try await a.call("object.delete", ["context": .string(context), "objectID": .string(earlier[1])])
            try await a.call("context.save", ["context": .string(context)])
            let sent = try await a.send()
            #expect(sent["saved"] == 5)
            #expect(sent["deleted"] == 1)
            #expect(try await a.pending() == 0)
            let records = try await cloud.records(user: "owner")
            // A change page from nil lists records in the order of their last writes: the order
            // of the saves. (Not the sessions': saving a child writes its parent again.) The
            // event in the new session was taken, so its session went before it.
            let ids = Dictionary(uniqueKeysWithValues: records.enumerated().compactMap { position, record -> (String, Int)? in
                guard let id = record["fields"]?["CD_id"]?["value"]?.stringValue else { return nil }
                return (id, position)
            })
            #expect(ids["deleted"] == nil)
            #expect(ids["second"] != nil)
            let order = ["x1", "x2", "y1", "edited"].map { id in ids[id] ?? -1 }
            #expect(order.allSatisfy { $0 >= 0 })
            #expect(order == order.sorted())
            #expect(try await a.objects().first { $0["values"]?["id"] == "edited" }?["values"]?["note"] == "later")
            await ConflictTests.stop(cloud, a)
        }

        /// What a fetch commits does not wait for the disk: a database change token is
        /// derivable (lost, the zones it covered are listed again; each zone's token is kept
        /// with its pages), and a page of records rolls back with its token. A page's notice
        /// names a history token, which a power cut must not hand out again: the log is synced
        /// first (on the announcer's thread, while the fetch applies the next page). A fetch
        /// saved each database token in a commit of its own that waited, two per automatic
        /// pass, and each page waited for its commit, on the thread the pipeline ends on.
        /// `info.commits` counts each store's commits by whether they waited, `info.logSyncs`
        /// the syncs made before an announcement.
        @Test("A fetch commits without waiting for the disk; a page's notice goes out after its log is synced; nothing new commits nothing")
        func fetchCommitsWithoutWaiting() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud, dataDirectory: cloud.directory.file("B-data"))
            let watcher = try await b.remoteChangeWatcher()
            defer { watcher.close() }
            func counts() async throws -> (durable: Int, relaxed: Int, syncs: Int) {
                let info = try await b.call("info")
                let all = try #require(info["commits"]?.objectValue)
                #expect(Set(all.keys) == ["Private", "Shared"])
                let sums = all.values.reduce((0, 0)) { ($0.0 + ($1["durable"]?.intValue ?? 0), $0.1 + ($1["relaxed"]?.intValue ?? 0)) }
                return (sums.0, sums.1, try #require(info["logSyncs"]?.intValue))
            }
            // (B's first fetch sets the device up: its account, its zone.)
            #expect(try await b.fetch()["changedRecords"] == 0)
            try await a.insertEvents(["e1", "e2"])
            try await a.send()
            let before = try await counts()
            #expect(try await b.fetch()["changedRecords"] == 2)
            let page = try await counts()
            #expect(page.durable == before.durable)
            #expect(page.relaxed > before.relaxed)
            #expect(page.syncs == before.syncs + 1)
            // The sync came before the notice, which came before the fetch's reply.
            var events = watcher.events.makeAsyncIterator()
            let event = try #require(await events.next())
            #expect(event.name == "remoteChange")
            #expect(event.data["author"] == "sync")
            #expect(event.data["changedObjectIDs"]?.arrayValue?.count == 2)
            for _ in 0..<3 { #expect(try await b.fetch()["changedRecords"] == 0) }
            let idle = try await counts()
            #expect(idle.durable == page.durable && idle.relaxed == page.relaxed && idle.syncs == page.syncs)
            // Another user's change moves both of the owner's database tokens and nothing else.
            let bob = try await cloud.writer("bob")
            defer { bob.close() }
            _ = try await bob.call("records.modify", ["database": "private", "saves": [ImportRefusalTests.event("bob-1")]])
            #expect(try await b.fetch()["changedRecords"] == 0)
            let tokens = try await counts()
            #expect(tokens.durable == idle.durable)
            #expect(tokens.relaxed > idle.relaxed)
            #expect(tokens.syncs == idle.syncs)
            // A client's save on B still waits for the disk.
            try await b.insertEvents(["b1"])
            #expect(try await counts().durable > tokens.durable)
            #expect(try await b.ids() == ["b1", "e1", "e2"])
            await ConflictTests.stop(cloud, a, b)
        }

        /// A page's records are looked up by name in one statement per lookup, the names passed
        /// as one JSON array (`json_each`): names with the characters JSON escapes must come
        /// back as themselves, or an update would insert a second row and a reference would
        /// find no target.
        @Test("Records another client names with quotes and backslashes are found again by name: an update replaces the row, a reference resolves")
        func namesJSONEscapesAreFoundAgain() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            let sessionName = #"S "vet" \ 1"#, eventName = #"E\"note"/2"#
            let session: JSONValue = ["recordName": .string(sessionName), "recordType": "CD_CareSession", "zoneID": ImportRefusalTests.zone, "fields": [
                "CD_entityName": ["type": "string", "value": "CareSession"], "CD_id": ["type": "string", "value": "vet"],
                "CD_title": ["type": "string", "value": "Vet"], "CD_isDefault": ["type": "int64", "value": 0]]]
            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                session, ImportRefusalTests.event(eventName, ["CD_id": ["type": "string", "value": "quoted"],
                                                "CD_session": ["type": "string", "value": .string(sessionName)]])]])
            try await a.fetch()
            let vet = try await a.objectID(id: "vet", entity: "CareSession")
            #expect(try await a.object(id: "quoted")?["values"]?["session"]?.stringValue == vet)
            let current = try await writer.call("records.fetch", ["database": "private", "recordIDs": [["recordName": .string(eventName), "zoneID": ImportRefusalTests.zone]]])
            let tag = try #require(current["records"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                ImportRefusalTests.event(eventName, ["CD_id": ["type": "string", "value": "quoted"], "CD_note": ["type": "string", "value": "edited"],
                                       "CD_session": ["type": "string", "value": .string(sessionName)]], tag: tag)]])
            let second = try await a.fetch()
            #expect(second["changedRecords"] == 1)
            #expect(try await a.ids() == ["quoted"])
            #expect(try await a.object(id: "quoted")?["values"]?["note"] == "edited")
            #expect(try await a.pending() == 0)
            await ConflictTests.stop(cloud, a)
        }

        @Test("No echo: what B imports is never sent back, and B's clients hear of it as author sync")
        func noEcho() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let watcher = try await b.remoteChangeWatcher()
            try await a.insertEvents(["e1", "e2"])
            try await a.send()
            let fetched = try await b.fetch()
            #expect(fetched["changedRecords"] == 2)
            var iterator = watcher.events.makeAsyncIterator()
            let event = try #require(await iterator.next())
            #expect(event.name == "remoteChange")
            #expect(event.data["author"] == "sync")
            #expect(event.data["contextName"] == "cloudMirror")
            #expect(event.data["changedObjectIDs"]?.arrayValue?.count == 2)
            #expect(try await b.pending() == 0)
            let sent = try await b.send()
            #expect(sent["requests"] == 0)
            #expect(try await b.status()["quiescent"] == true)
            let again = try await a.fetch()
            #expect(again["changedRecords"] == 0)
            watcher.close()
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("One save that creates a session and moves saved events into it sends the session first (the queue keeps history's order)")
        func newParentGoesBeforeMovedChildren() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let events = try await a.insertEvents(["moved-1", "moved-2"])
            try await a.send()
            let context = try await a.context()
            let session = try #require(try await a.call("object.insert", ["context": .string(context), "entity": "CareSession",
                                                                          "values": ["id": "parent", "title": "New"]])["objectID"]?.stringValue)
            for event in events {
                try await a.call("object.set", ["context": .string(context), "objectID": .string(event), "values": ["session": .string(session)]])
            }
            try await a.call("context.save", ["context": .string(context)])
            try await a.send()
            // The zone's change feed lists records in the order the server saved them.
            let order = try await cloud.records(user: "owner").compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue }
            let parent = try #require(order.firstIndex(of: "parent"))
            #expect(order.filter { $0.hasPrefix("moved-") }.allSatisfy { order.firstIndex(of: $0)! > parent }, "\(order)")
            _ = await a.stop()
            await cloud.stop()
        }

        @Test("A fetch of several pages tells B's clients of every imported object, each page's history token once")
        func multiPageFetchEvents() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let watcher = try await b.remoteChangeWatcher()
            let ids = (0..<2500).map { "p\($0)" }
            try await a.insertEvents(ids)
            try await a.send()
            let fetched = try await b.fetch()
            #expect(fetched["pages"] == 3 && fetched["changedRecords"] == 2500)
            var seen: Set<String> = []
            var tokens: [Int] = []
            var iterator = watcher.events.makeAsyncIterator()
            while seen.count < 2500, let event = await iterator.next() {
                guard event.name == "remoteChange", event.data["author"] == "sync" else { continue }
                tokens.append(event.data["token"]?.intValue ?? -1)
                for id in event.data["changedObjectIDs"]?.arrayValue ?? [] { if let id = id.stringValue { seen.insert(id) } }
            }
            #expect(seen.count == 2500)
            #expect(tokens.count == 3 && Set(tokens).count == 3 && tokens == tokens.sorted(), "\(tokens)")
            watcher.close()
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("sync.now sends then fetches; sync.status shows tokens and the seed-002 fault is not needed for private data")
        func syncNowAndStatus() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await a.insertEvents(["x"])
            let now = try await a.now()
            #expect(now["send"]?["saved"] == 1)
            try await b.insertEvents(["y"])
            try await b.now()
            try await a.now()
            #expect(try await a.ids() == ["x", "y"])
            #expect(try await b.ids() == ["x", "y"])
            let status = try await a.status()
            let privateStatus = try #require(status["stores"]?.arrayValue?.first { $0["store"] == "Private" })
            #expect(privateStatus["databaseToken"]?.stringValue != nil)
            #expect(privateStatus["zoneTokens"]?["__defaultOwner__/com.apple.coredata.cloudkit.zone"]?.stringValue != nil)
            #expect(status["user"] == "owner")
            #expect(status["quiescent"] == true)
            #expect(status["lastSuccess"]?.stringValue?.hasSuffix("Z") == true)
            #expect(status["inFlight"] == nil)
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }
    }
}
