import Foundation
import MeowWire
import SQLiteKit
import Testing
import TestSupport

@Suite("Merge policies, history and remote-change events (two connections)")
struct ConflictAndHistoryTests {
    struct Expected: Sendable, CustomStringConvertible {
        var policy: String
        var note: String
        var eventType: String
        var value: Double
        var description: String { policy }
    }

    // The store's save changed note and eventTypeRaw; the context changed note and value.
    static let matrix: [Expected] = [
        Expected(policy: "mergeByPropertyStoreTrump", note: "theirs", eventType: "play", value: 2),
        Expected(policy: "mergeByPropertyObjectTrump", note: "mine", eventType: "play", value: 2),
        Expected(policy: "overwrite", note: "mine", eventType: "note", value: 2),
        Expected(policy: "rollback", note: "theirs", eventType: "play", value: 1),
    ]

    /// Saves one event on `a`, reads it in a context of `b` with `policy`, then `a` changes it.
    static func conflictingSetup(_ a: StoreClient, _ b: StoreClient, policy: String) async throws -> (String, String) {
        let writer = try await a.openContext()
        let temporary = try await a.insertEvent(writer, id: "e1", extra: ["note": "a", "value": 1])
        let event = try StoreClient.permanentID(try await a.save(writer), temporary)

        let reader = try await b.openContext(policy)
        let fetched = try await b.call("fetch", ["entity": "CareEvent", "predicate": "id == 'e1'", "context": .string(reader)])
        #expect(fetched["objects"]?[0]?["version"] == 1)

        try await a.call("object.set", ["context": .string(writer), "objectID": .string(event), "values": ["note": "theirs", "eventTypeRaw": "play"]])
        _ = try await a.save(writer)
        try await b.call("object.set", ["context": .string(reader), "objectID": .string(event), "values": ["note": "mine", "value": 2]])
        return (event, reader)
    }

    /// Scenario 18: two connections of one store-service save the same object; the saving
    /// context's merge policy decides (store trump, object trump, overwrite, rollback).
    @Test(arguments: matrix)
    func mergePolicyDecidesBetweenTwoConnections(_ expected: Expected) async throws {
        let store = try await StoreFixture.start()
        let a = try await store.client("a")
        let b = try await store.client("b")
        let (event, reader) = try await Self.conflictingSetup(a, b, policy: expected.policy)
        let saved = try await b.save(reader)
        #expect(saved["merged"]?[0]?["objectID"] == .string(event))
        let values = try #require(try await a.get(event)["values"])
        #expect(values["note"] == .string(expected.note))
        #expect(values["eventTypeRaw"] == .string(expected.eventType))
        #expect(values["value"]?.doubleValue == expected.value)
        // The context now sees the merged object and can save again without a conflict.
        try await b.call("object.set", ["context": .string(reader), "objectID": .string(event), "values": ["value": 3]])
        _ = try await b.save(reader)
        a.close(); b.close()
        _ = await store.stop()
    }

    /// Scenario 18, the error policy.
    @Test func errorPolicyFailsWithCouldNotMergeChangesAndTheConflictList() async throws {
        let store = try await StoreFixture.start()
        let a = try await store.client("a")
        let b = try await store.client("b")
        let (event, reader) = try await Self.conflictingSetup(a, b, policy: "error")
        let error = try await b.failure("context.save", ["context": .string(reader)])
        #expect(error.code == .mergeConflict)
        #expect(error.message == "Could not merge changes.")
        #expect(error.details["coreDataCode"] == 133020)
        let conflict = try #require(error.details["conflicts"]?[0])
        #expect(conflict["objectID"] == .string(event))
        #expect(conflict["oldVersion"] == 1)
        #expect(conflict["newVersion"] == 2)
        #expect(conflict["snapshot"]?["note"] == "a")
        #expect(conflict["storedSnapshot"]?["note"] == "theirs")
        // Nothing of the failed save was written.
        let values = try #require(try await a.get(event)["values"])
        #expect(values["note"] == "theirs")
        #expect(values["value"]?.doubleValue == 1)

        // context.refresh reads the stored row under the context's edits; the save then goes through.
        let refreshed = try await b.call("context.refresh", ["context": .string(reader)])
        #expect(refreshed["refreshed"] == 1)
        _ = try await b.save(reader)
        let after = try #require(try await a.get(event)["values"])
        #expect(after["note"] == "mine")
        #expect(after["value"]?.doubleValue == 2)
        #expect(after["eventTypeRaw"] == "play")
        a.close(); b.close()
        _ = await store.stop()
    }

    @Test func historyRecordsEverySaveAndPurgeKeepsTokensMonotonic() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.call("context.open", ["name": "editor", "author": "app"])["context"]!
        let first = try await client.insertEvent(context.stringValue!, id: "h1")
        let saved = try await client.save(context.stringValue!)
        let event = try StoreClient.permanentID(saved, first)
        let token1 = try #require(saved["transactions"]?[0]?["token"]?.intValue)
        try await client.call("object.set", ["context": context, "objectID": .string(event), "values": ["note": "edited"]])
        let token2 = try #require(try await client.save(context.stringValue!)["transactions"]?[0]?["token"]?.intValue)
        try await client.call("object.delete", ["context": context, "objectID": .string(event)])
        let token3 = try #require(try await client.save(context.stringValue!)["transactions"]?[0]?["token"]?.intValue)
        #expect(token1 < token2 && token2 < token3)

        let history = try await client.call("history.fetch", ["store": "Private", "afterToken": .int(token1 - 1)])
        let transactions = try #require(history["transactions"]?.arrayValue)
        #expect(transactions.map { $0["token"]?.intValue } == [token1, token2, token3])
        #expect(transactions[0]["author"] == "app")
        #expect(transactions[0]["contextName"] == "editor")
        #expect(transactions[0]["changes"]?[0]?["kind"] == "insert")
        #expect(transactions[1]["changes"]?[0]?["changedProperties"] == ["note"])
        #expect(transactions[2]["changes"]?[0]?["kind"] == "delete")
        #expect(transactions[2]["changes"]?[0]?["tombstone"]?["id"] == "h1")

        let purged = try await client.call("history.purge", ["store": "Private", "beforeToken": .int(token3)])
        #expect(purged["purgedTransactions"] == 2)
        let remaining = try await client.call("history.fetch", ["store": "Private"])
        #expect(remaining["transactions"]?.arrayValue?.map { $0["token"]?.intValue } == [token3])
        _ = try await client.insertEvent(context.stringValue!, id: "h2")
        let token4 = try #require(try await client.save(context.stringValue!)["transactions"]?[0]?["token"]?.intValue)
        #expect(token4 > token3)
        client.close()
        _ = await store.stop()
    }

    @Test("clock.set moves the device's clock: history is stamped with the time it reads, it keeps running, and null returns to the real clock")
    func deviceClockStampsHistory() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let set = try await client.call("clock.set", ["now": 1_900_000_000])
        #expect(set["now"]?.doubleValue.map { $0 >= 1_900_000_000 && $0 < 1_900_000_060 } == true)
        let advanced = try await client.call("clock.set", ["advanceSeconds": 3600])
        #expect(advanced["now"]?.doubleValue.map { $0 >= 1_900_003_600 && $0 < 1_900_003_660 } == true)
        _ = try await client.insertEvent(context, id: "c1")
        let token = try #require(try await client.save(context)["transactions"]?[0]?["token"]?.intValue)
        let history = try await client.call("history.fetch", ["store": "Private", "afterToken": .int(token - 1)])
        // 1_900_003_600 s after 1970 is 2030-03-17T18:46:40Z.
        #expect(history["transactions"]?[0]?["timestamp"]?.stringValue?.hasPrefix("2030-03-17T18:4") == true)

        let both = try await client.failure("clock.set", ["now": 1, "advanceSeconds": 1])
        #expect(both.code == .invalidField)
        #expect(both.details["field"] == "params.advanceSeconds")
        let real = try await client.call("clock.set", ["now": .null])
        #expect(real["offsetSeconds"] == 0)
        #expect(abs((real["now"]?.doubleValue ?? 0) - Date().timeIntervalSince1970) < 60)
        client.close()
        _ = await store.stop()
    }

    /// History is one packed row per transaction; stores written with a row per change
    /// (`z_change`) are folded into that layout when they open, and their history reads the same.
    @Test func historyOfAStoreWithTheOldPerChangeRowsIsMigratedOnOpen() async throws {
        let directory = TemporaryDirectory()
        var store = try await StoreFixture.start(onDisk: true, ["--no-orphan-repair"], directory: directory)
        var client = try await store.client()
        let context = try await client.call("context.open", ["author": "app"])["context"]!.stringValue!
        _ = try await client.insertEvent(context, id: "old-1")
        let token = try #require(try await client.save(context)["transactions"]?[0]?["token"]?.intValue)
        client.close()
        #expect(await store.stop() == 0)

        // Rewrite the file into the old layout: changes as rows, no packed column. (The handle
        // closes when it goes out of use, before the service reopens the file.)
        let database = try Database(path: directory.file("data") + "/MeowCare-Private.sqlite")
        let uuid = try #require(try database.scalar("SELECT z_uuid FROM e_CareEvent")?.string)
        let key = try #require(try database.scalar("SELECT z_pk FROM e_CareEvent")?.int64)
        try database.execute("""
            ALTER TABLE z_transaction DROP COLUMN changes;
            CREATE TABLE z_change(id INTEGER PRIMARY KEY, token INTEGER NOT NULL, kind TEXT NOT NULL, entity TEXT NOT NULL,
                pk INTEGER NOT NULL, uuid TEXT NOT NULL, changed TEXT, tombstone TEXT);
            """)
        try database.execute("INSERT INTO z_change(token, kind, entity, pk, uuid, changed) VALUES (?, 'insert', 'CareEvent', ?, ?, '[\"id\",\"note\"]')",
                             [token, key, uuid])
        try database.execute("INSERT INTO z_change(token, kind, entity, pk, uuid, tombstone) VALUES (?, 'delete', 'CareEvent', 99, 'gone', '{\"uuid\":\"gone\"}')",
                             [token])

        store = try await StoreFixture.start(onDisk: true, ["--no-orphan-repair"], directory: directory)
        client = try await store.client()
        let history = try await client.call("history.fetch", ["store": "Private"])
        let changes = try #require(history["transactions"]?.arrayValue?.first { $0["token"]?.intValue == token }?["changes"]?.arrayValue)
        #expect(changes.map { $0["kind"] } == ["insert", "delete"])
        #expect(changes[0]["uuid"] == .string(uuid))
        #expect(changes[0]["changedProperties"] == ["id", "note"])
        #expect(changes[1]["tombstone"] == ["uuid": "gone"])
        client.close()
        #expect(await store.stop() == 0)
        let reopened = try Database(path: directory.file("data") + "/MeowCare-Private.sqlite")
        #expect(try reopened.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'z_change'")?.int == 0)
    }

    @Test func remoteChangeGoesToOtherSubscribedConnectionsNotTheSaver() async throws {
        let store = try await StoreFixture.start()
        let listener = try RawConnection(path: store.socket)
        try listener.hello(client: "listener")
        listener.send(["id": 1, "op": "subscribe", "params": ["topics": ["remoteChange"]]])
        #expect(try listener.nextMessage()["ok"] == true)
        let saver = try RawConnection(path: store.socket)
        try saver.hello(client: "saver")
        saver.send(["id": 1, "op": "subscribe", "params": ["topics": ["remoteChange"]]])
        #expect(try saver.nextMessage()["ok"] == true)

        func save(_ connection: RawConnection, id: String) async throws -> JSONValue {
            await offThread {
                connection.send(["id": 2, "op": "context.open", "params": [:]])
                let context = (try? connection.nextMessage())?["result"]?["context"] ?? .null
                connection.send(["id": 3, "op": "object.insert", "params": ["context": context, "entity": "CareEvent", "values": [
                    "id": .string(id), "eventTypeRaw": "feeding", "occurredAt": "2026-07-27T08:00:00Z", "updatedAt": "2026-07-27T08:00:00Z"]]])
                _ = try? connection.nextMessage()
                connection.send(["id": 4, "op": "context.save", "params": ["context": context]])
                return (try? connection.nextMessage()) ?? .null
            }
        }
        let saved = try await save(saver, id: "from-saver")
        #expect(saved["ok"] == true)
        let event = await offThread { try? listener.nextMessage() }
        #expect(event?["event"] == "remoteChange")
        #expect(event?["data"]?["store"] == "Private")
        #expect(event?["data"]?["token"] == saved["result"]?["transactions"]?[0]?["token"])
        #expect(event?["data"]?["changedObjectIDs"] == [saved["result"]?["inserted"]?[0]?["objectID"] ?? .null])

        // The saver's next event is the listener's save, never its own.
        let other = try await save(listener, id: "from-listener")
        let next = await offThread { try? saver.nextMessage() }
        #expect(next?["data"]?["token"] == other["result"]?["transactions"]?[0]?["token"])
        _ = await store.stop()
    }

    /// A client that resumes history from the last token it was told of must never be told of
    /// token N+1 before N: eight clients save at once, and a subscriber hears every token of the
    /// store in increasing order, none missing.
    @Test("remoteChange notices reach a subscriber in commit order while eight clients save at once")
    func remoteChangeNoticesFollowCommitOrder() async throws {
        let store = try await StoreFixture.start()
        let listener = try RawConnection(path: store.socket)
        try listener.hello(client: "listener")
        listener.send(["id": 1, "op": "subscribe", "params": ["topics": ["remoteChange"]]])
        #expect(try listener.nextMessage()["ok"] == true)
        let clients = 8, saves = 60
        let savers = try (0..<clients).map { index in
            let connection = try RawConnection(path: store.socket)
            try connection.hello(client: "saver-\(index)")
            return connection
        }
        let answered = await withTaskGroup(of: Int.self) { group in
            for (index, connection) in savers.enumerated() {
                group.addTask {
                    await offThread {
                        connection.send(["id": 1, "op": "context.open", "params": [:]])
                        let context = (try? connection.nextMessage())?["result"]?["context"] ?? .null
                        var ok = 0
                        for round in 0..<saves {
                            connection.send(["id": 2, "op": "object.insert", "params": ["context": context, "entity": "CareEvent", "values": [
                                "id": .string("c\(index)-\(round)"), "eventTypeRaw": "feeding", "occurredAt": "2026-07-27T08:00:00Z",
                                "updatedAt": "2026-07-27T08:00:00Z"]]])
                            connection.send(["id": 3, "op": "context.save", "params": ["context": context]])
                            _ = try? connection.nextMessage()
                            if (try? connection.nextMessage())?["ok"] == true { ok += 1 }
                        }
                        return ok
                    }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(answered == clients * saves)
        let tokens = await offThread { () -> [Int] in
            (0..<(clients * saves)).compactMap { _ in (try? listener.nextMessage())?["data"]?["token"]?.intValue }
        }
        #expect(tokens.count == clients * saves)
        let out = tokens.indices.dropFirst().first { tokens[$0] != tokens[$0 - 1] + 1 }
        #expect(out == nil, "token \(out.map { tokens[$0] } ?? 0) came right after \(out.map { tokens[$0 - 1] } ?? 0)")
        withExtendedLifetime(savers) {}
        _ = await store.stop()
    }
}
