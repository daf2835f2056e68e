import Foundation
import MeowWire
import Testing
import TestSupport

@Suite("Documented choices (differences-core-data.md)")
struct SemanticsChoicesTests {
    @Test func notEqualMatchesNilAndFetchReadsSavedStateOnly() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        _ = try await client.insertEvent(context, id: "with-note", extra: ["note": "x"])
        _ = try await client.insertEvent(context, id: "no-note")
        #expect(try await client.count("CareEvent") == 0)
        _ = try await client.save(context)
        // NSPredicate's in-memory meaning: nil != 'x' is true.
        #expect(try await client.count("CareEvent", predicate: "note != 'x'") == 1)
        #expect(try await client.count("CareEvent", predicate: "note == nil") == 1)
        // A pending edit is not seen by a fetch until it is saved.
        let found = try await client.call("fetch", ["entity": "CareEvent", "predicate": "id == 'no-note'"])
        let id = try #require(found["objects"]?[0]?["objectID"])
        try await client.call("object.set", ["context": .string(context), "objectID": id, "values": ["note": "x"]])
        #expect(try await client.count("CareEvent", predicate: "note == 'x'") == 1)
        _ = try await client.save(context)
        #expect(try await client.count("CareEvent", predicate: "note == 'x'") == 2)
        client.close()
        _ = await store.stop()
    }

    /// With nil in play, SQL's unknown would make `NOT (note == 'x')` miss a nil note that
    /// `note != 'x'` finds; in-memory NSPredicate semantics make a predicate and its NOT split
    /// the objects between them, every form and nesting alike.
    @Test func notIsTheComplementOfItsPredicateWhateverIsNil() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let rows: [(String, [String: JSONValue])] = [("nil-nil", [:]), ("x-nil", ["note": "x"]), ("nil-150", ["value": 150]),
                                                     ("y-50", ["note": "y", "value": 50]), ("X-150", ["note": "X", "value": 150])]
        for (id, values) in rows {
            var extra = values
            if values["value"] == nil { extra["value"] = .null }
            _ = try await client.insertEvent(context, id: id, extra: extra)
        }
        _ = try await client.save(context)
        let all = try await client.count("CareEvent")
        #expect(all == rows.count)
        for predicate in ["note == 'x'", "note != 'x'", "note ==[c] 'x'", "note BEGINSWITH 'x'", "note CONTAINS[c] 'x'", "value > 100",
                          "value <= 100", "note IN {'x', 'y'}", "note == nil", "note == 'x' OR value > 100", "note == 'x' AND value > 100",
                          "NOT (value > 100)", "note == 'y' OR NOT (value < 100)"] {
            let matched = try await client.count("CareEvent", predicate: predicate)
            let complement = try await client.count("CareEvent", predicate: "NOT (\(predicate))")
            #expect(matched + complement == all, "\(predicate): \(matched), its NOT \(complement), of \(all)")
        }
        let notEqual = try await client.count("CareEvent", predicate: "note != 'x'")
        #expect(try await client.count("CareEvent", predicate: "NOT (note == 'x')") == notEqual)
        client.close()
        _ = await store.stop()
    }

    /// NSPredicate's `[d]` ignores diacritics, `[cd]` case too. Marks are removed after
    /// canonical decomposition, so a composed and a decomposed `é` meet under `[d]` (without a
    /// modifier they differ: strings compare as stored). `[d]` was read as `[c]`.
    @Test func diacriticInsensitiveComparisonsIgnoreMarksComposedOrNot() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let notes = ["Éclair", "éclair", "e\u{301}clair", "eclair", "naïve", "Øre"]
        for (index, note) in notes.enumerated() {
            _ = try await client.insertEvent(context, id: "e\(index)", extra: ["note": .string(note)])
        }
        _ = try await client.save(context)
        func ids(_ predicate: String) async throws -> [String] {
            try await client.call("fetch", ["entity": "CareEvent", "predicate": .string(predicate), "sortDescriptors": [["key": "id"]]])["objects"]?
                .arrayValue?.compactMap { $0["values"]?["id"]?.stringValue } ?? []
        }
        #expect(try await ids("note == 'éclair'") == ["e1"])
        #expect(try await ids("note ==[d] 'eclair'") == ["e1", "e2", "e3"])
        #expect(try await ids("note ==[d] 'éclair'") == ["e1", "e2", "e3"])
        #expect(try await ids("note ==[c] 'éclair'") == ["e0", "e1"])
        #expect(try await ids("note ==[cd] 'ECLAIR'") == ["e0", "e1", "e2", "e3"])
        #expect(try await ids("note BEGINSWITH[cd] 'ECL'") == ["e0", "e1", "e2", "e3"])
        #expect(try await ids("note CONTAINS[d] 'ai'") == ["e0", "e1", "e2", "e3", "e4"])
        #expect(try await ids("note ENDSWITH[DC] 'IVE'") == ["e4"])
        #expect(try await ids("note ==[d] 'Ore'").isEmpty, "ø does not decompose")
        let error = try await client.failure("fetch", ["entity": "CareEvent", "predicate": "note ==[x] 'a'"])
        #expect(error.code == "invalidPredicate")
        #expect(error.message.contains("[c], [d] or [cd]"))
        client.close()
        _ = await store.stop()
    }

    /// NSPredicate's `[c]` folds case by Unicode's rules (SQLite's `lower()` alone folds ASCII),
    /// and an empty operand is found by no BEGINSWITH, ENDSWITH or CONTAINS (NSString finds @""
    /// nowhere); both hold in every form the predicate can take.
    @Test func caseInsensitiveComparisonsFoldUnicodeAndEmptyOperandsMatchNothing() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        for (index, note) in ["Éclair", "éclair", "straße", "STRASSE", "ΣΟΦΙΑ", "abc", ""].enumerated() {
            _ = try await client.insertEvent(context, id: "e\(index)", extra: ["note": .string(note)])
        }
        _ = try await client.save(context)
        func notes(_ predicate: String) async throws -> [String] {
            try await client.call("fetch", ["entity": "CareEvent", "predicate": .string(predicate), "sortDescriptors": [["key": "id"]]])["objects"]?
                .arrayValue?.compactMap { $0["values"]?["note"]?.stringValue } ?? []
        }
        #expect(try await notes("note ==[c] 'ÉCLAIR'") == ["Éclair", "éclair"])
        #expect(try await notes("note BEGINSWITH[c] 'é'") == ["Éclair", "éclair"])
        #expect(try await notes("note ==[c] 'strasse'") == ["straße", "STRASSE"])
        #expect(try await notes("note CONTAINS[c] 'ss'") == ["straße", "STRASSE"])
        #expect(try await notes("note ENDSWITH[c] 'σοφια'") == ["ΣΟΦΙΑ"])
        #expect(try await notes("note ==[c] 'ABC'") == ["abc"])
        #expect(try await notes("note !=[c] 'ABC'").count == 6)
        #expect(try await notes("note ==[c] ''") == [""])
        for form in ["BEGINSWITH", "ENDSWITH", "CONTAINS", "BEGINSWITH[c]", "CONTAINS[c]"] {
            #expect(try await notes("note \(form) ''").isEmpty, "\(form) ''")
            #expect(try await notes("NOT (note \(form) '')").count == 7, "NOT (\(form) '')")
        }
        client.close()
        _ = await store.stop()
    }

    @Test func editOfAnObjectDeletedElsewhereIsDroppedUnlessThePolicyIsError() async throws {
        let store = try await StoreFixture.start()
        let a = try await store.client("a")
        let b = try await store.client("b")
        let writer = try await a.openContext()
        let temporary = try await a.insertEvent(writer, id: "doomed")
        let event = try StoreClient.permanentID(try await a.save(writer), temporary)
        let strict = try await b.openContext("error")
        let lenient = try await b.openContext("mergeByPropertyObjectTrump")
        for context in [strict, lenient] {
            try await b.call("object.set", ["context": .string(context), "objectID": .string(event), "values": ["note": "late edit"]])
        }
        try await a.call("object.delete", ["context": .string(writer), "objectID": .string(event)])
        _ = try await a.save(writer)

        let error = try await b.failure("context.save", ["context": .string(strict)])
        #expect(error.code == .mergeConflict)
        #expect(error.details["conflicts"]?[0]?["storedSnapshot"] == .null)
        let merged = try await b.save(lenient)
        #expect(merged["merged"]?[0]?["dropped"] == ["note"])
        #expect(try await b.count("CareEvent") == 0)
        a.close(); b.close()
        _ = await store.stop()
    }

    @Test func deletingASessionCascadesToItsEventsWithTombstones() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let session = try await client.insertSession(context, id: "s")
        _ = try await client.insertEvent(context, id: "child-1", extra: ["session": .string(session)])
        _ = try await client.insertEvent(context, id: "child-2", extra: ["session": .string(session)])
        let saved = try await client.save(context)
        let sessionID = try StoreClient.permanentID(saved, session)
        try await client.call("object.delete", ["context": .string(context), "objectID": .string(sessionID)])
        let deleted = try await client.save(context)
        #expect(deleted["deleted"]?.arrayValue?.count == 3)
        #expect(try await client.count("CareEvent") == 0)
        let history = try await client.call("history.fetch", ["store": "Private", "afterToken": deleted["transactions"]?[0]?["token"].map { .int(($0.intValue ?? 1) - 1) } ?? 0])
        let tombstones = (history["transactions"]?[0]?["changes"]?.arrayValue ?? []).compactMap { $0["tombstone"]?["id"]?.stringValue }
        #expect(Set(tombstones) == ["s", "child-1", "child-2"])
        client.close()
        _ = await store.stop()
    }
}

@Suite("Hooks for the cloud mirror")
struct MirrorHookTests {
    @Test func importsKeepTheirUUIDAndZoneAndSkipThePermissionCheck() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        try await client.call("share.setMetadata", ["zoneName": "share-Z", "permission": "readOnly"])
        let sync = try #require(try await client.call("context.open", ["author": "sync", "name": "import"])["context"]?.stringValue)
        let values: JSONValue = ["id": "s-remote"]
        let session = try #require(try await client.call("object.insert", ["context": .string(sync), "entity": "CareSession", "store": "Shared",
                                                                           "uuid": "REC-1", "zone": "share-Z", "values": values])["objectID"]?.stringValue)
        let saved = try await client.save(sync)
        let sessionID = try StoreClient.permanentID(saved, session)
        let fetched = try await client.call("fetch", ["entity": "CareSession", "predicate": "uuid == 'REC-1' AND zone == 'share-Z'"])
        #expect(fetched["objects"]?[0]?["objectID"] == .string(sessionID))
        let history = try await client.call("history.fetch", ["store": "Shared"])
        #expect(history["transactions"]?.arrayValue?.last?["author"] == "sync")

        // The same record name twice in one store is a uniqueness conflict, not a duplicate.
        _ = try await client.call("object.insert", ["context": .string(sync), "entity": "CareSession", "store": "Shared",
                                                    "uuid": "REC-1", "values": values])
        let duplicate = try await client.failure("context.save", ["context": .string(sync)])
        #expect(duplicate.code == "uniquenessConstraint")
        #expect(duplicate.details["coreDataCode"] == 133021)

        // The app's own edit of the read-only share is still refused.
        let app = try await client.openContext()
        try await client.call("object.set", ["context": .string(app), "objectID": .string(sessionID), "values": ["title": "mine"]])
        #expect(try await client.failure("context.save", ["context": .string(app)]).code == .permissionFailure)
        client.close()
        _ = await store.stop()
    }
}

@Suite("Saves across both stores")
struct TwoStoreSaveTests {
    @Test func aSaveTouchingBothStoresWritesNeitherWhenOnePartFails() async throws {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let a = try await store.client("a")
        let b = try await store.client("b")
        let writer = try await a.openContext()
        let temporary = try await a.insertEvent(writer, id: "shared-e", store: "Shared")
        let shared = try StoreClient.permanentID(try await a.save(writer), temporary)

        // b reads the shared event, then a changes it: b's save will conflict in the Shared store.
        let context = try await b.openContext("error")
        try await b.call("object.set", ["context": .string(context), "objectID": .string(shared), "values": ["note": "b"]])
        try await a.call("object.set", ["context": .string(writer), "objectID": .string(shared), "values": ["note": "a"]])
        _ = try await a.save(writer)
        _ = try await b.insertEvent(context, id: "private-e", store: "Private")

        let error = try await b.failure("context.save", ["context": .string(context)])
        #expect(error.code == .mergeConflict)
        #expect(try await b.count("CareEvent", stores: ["Private"]) == 0)
        let history = try await b.call("history.fetch", ["store": "Private"])
        #expect(history["transactions"] == [])
        a.close(); b.close()
        _ = await store.stop()
    }
}
