import Foundation
import MeowWire
import Testing

/// NSPredicate's forms over to-many relationships (ANY/SOME, ALL, NONE, @count) and its
/// LIKE and MATCHES, against a real store-service.
@Suite("Fetch predicates: to-many relationships, LIKE and MATCHES")
struct PredicateCollectionTests {
    /// Sessions mochi (insulin, feeding, a note "Café"), tama (two notes "x" and "y") and
    /// empty (no events); events e-… named by their id.
    static func store() async throws -> (StoreFixture, StoreClient) {
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let mochi = try await client.insertSession(context, id: "mochi")
        let tama = try await client.insertSession(context, id: "tama")
        _ = try await client.insertSession(context, id: "empty")
        let events: [(String, String, String, JSONValue)] = [
            ("e-insulin", mochi, "insulin", .null), ("e-feeding", mochi, "feeding", .null), ("e-cafe", mochi, "note", "Café"),
            ("e-x", tama, "note", "x"), ("e-y", tama, "note", "y"), ("e-bracket", tama, "note", "a[b]")]
        for (id, session, type, note) in events {
            _ = try await client.insertEvent(context, id: id, extra: ["session": .string(session), "eventTypeRaw": .string(type), "note": note])
        }
        _ = try await client.save(context)
        return (store, client)
    }

    static func ids(_ client: StoreClient, _ entity: String, _ predicate: String, _ arguments: [JSONValue] = []) async throws -> [String] {
        try await client.call("fetch", ["entity": .string(entity), "predicate": .string(predicate), "arguments": .array(arguments),
                                        "sortDescriptors": [["key": "id"]]])["objects"]?
            .arrayValue?.compactMap { $0["values"]?["id"]?.stringValue } ?? []
    }

    @Test("ANY, SOME, ALL and NONE over a to-many relationship; ALL and NONE hold for a session without events")
    func quantifiers() async throws {
        let (store, client) = try await Self.store()
        func sessions(_ predicate: String, _ arguments: [JSONValue] = []) async throws -> [String] {
            try await Self.ids(client, "CareSession", predicate, arguments)
        }
        #expect(try await sessions("ANY events.eventTypeRaw == 'insulin'") == ["mochi"])
        #expect(try await sessions("SOME events.eventTypeRaw == 'note'") == ["mochi", "tama"])
        #expect(try await sessions("ALL events.eventTypeRaw == 'note'") == ["empty", "tama"])
        #expect(try await sessions("NONE events.eventTypeRaw == 'insulin'") == ["empty", "tama"])
        #expect(try await sessions("NOT (ANY events.eventTypeRaw == 'insulin')") == ["empty", "tama"])
        #expect(try await sessions("ANY events.eventTypeRaw IN {'feeding', 'play'}") == ["mochi"])
        #expect(try await sessions("ANY events.note ==[cd] 'CAFE'") == ["mochi"])
        // A nil note compares false, so ALL … != nil fails mochi's insulin and feeding.
        #expect(try await sessions("ALL events.note != nil") == ["empty", "tama"])
        #expect(try await sessions("ANY events.eventTypeRaw == %@ AND title == 'Care'", ["note"]) == ["mochi", "tama"])
        // From the other side: a to-one step, then the to-many.
        #expect(try await Self.ids(client, "CareEvent", "ANY session.events.eventTypeRaw == 'insulin'") == ["e-cafe", "e-feeding", "e-insulin"])
        client.close()
        _ = await store.stop()
    }

    @Test("@count compares the number of a to-many relationship's objects")
    func counts() async throws {
        let (store, client) = try await Self.store()
        #expect(try await Self.ids(client, "CareSession", "events.@count == 0") == ["empty"])
        #expect(try await Self.ids(client, "CareSession", "events.@count >= 3") == ["mochi", "tama"])
        #expect(try await Self.ids(client, "CareSession", "events.@count > %@", [3]) == [])
        #expect(try await Self.ids(client, "CareSession", "events.@count != 3") == ["empty"])
        #expect(try await Self.ids(client, "CareEvent", "session.events.@count < 3").isEmpty)
        client.close()
        _ = await store.stop()
    }

    @Test("LIKE matches * and ? (a [ is itself); MATCHES is a whole-string ICU regular expression; both take [c] and [d]")
    func likeAndMatches() async throws {
        let (store, client) = try await Self.store()
        func events(_ predicate: String) async throws -> [String] { try await Self.ids(client, "CareEvent", predicate) }
        #expect(try await events("note LIKE 'Caf?'") == ["e-cafe"])
        #expect(try await events("note LIKE 'caf*'").isEmpty)
        #expect(try await events("note LIKE[cd] 'caf*'") == ["e-cafe"])
        #expect(try await events("note LIKE 'a[b]'") == ["e-bracket"])
        #expect(try await events("note LIKE '*'") == ["e-bracket", "e-cafe", "e-x", "e-y"])
        #expect(try await events("note MATCHES 'x|y'") == ["e-x", "e-y"])
        #expect(try await events("note MATCHES 'x.'").isEmpty, "MATCHES is the whole string")
        #expect(try await events("note MATCHES[c] 'CAF.'") == ["e-cafe"])
        #expect(try await events("note MATCHES[d] 'Cafe'") == ["e-cafe"])
        #expect(try await events("NOT (note MATCHES 'x')") == ["e-bracket", "e-cafe", "e-feeding", "e-insulin", "e-y"])
        client.close()
        _ = await store.stop()
    }

    @Test("Misused forms are invalidPredicate with a message that says what to write")
    func errors() async throws {
        let (store, client) = try await Self.store()
        let cases: [(String, String, String)] = [
            ("CareSession", "events.eventTypeRaw == 'note'", "ANY, ALL or NONE"),
            ("CareSession", "ANY title == 'Care'", "no to-many relationship"),
            ("CareSession", "ANY events == nil", "compares a property"),
            ("CareSession", "events.@count == 'two'", "compares with a number"),
            ("CareSession", "events.@sum > 1", "the only aggregate is @count"),
            ("CareSession", "events.@count BEGINSWITH 1", "compare it with"),
            ("CareEvent", "note MATCHES '('", "not a valid regular expression"),
            ("CareEvent", "value LIKE 1", "compares strings"),
            ("CareEvent", "value BETWEEN {1}", "BETWEEN takes two values"),
            ("CareSession", "ANY events.@count BETWEEN {1, 2}", "takes one comparison"),
        ]
        for (entity, predicate, message) in cases {
            let error = try await client.failure("fetch", ["entity": .string(entity), "predicate": .string(predicate)])
            #expect(error.code == "invalidPredicate", "\(predicate)")
            #expect(error.message.contains(message), "\(predicate): \(error.message)")
        }
        let keyPathNumber = try await client.failure("fetch", ["entity": "CareEvent", "predicate": "%K == 1", "arguments": [1]])
        #expect(keyPathNumber.code == "invalidPredicate")
        #expect(keyPathNumber.message.contains("must be a key path string"), "\(keyPathNumber.message)")
        // A %K argument is a key path of the model, never SQL.
        let injected = try await client.failure("fetch", ["entity": "CareEvent", "predicate": "%K == 1", "arguments": ["z_pk = 1 OR 1"]])
        #expect(injected.code == "unknownAttribute")
        client.close()
        _ = await store.stop()
    }

    @Test("BETWEEN includes both ends, also under ANY and on @count; %K takes a key path from the arguments")
    func betweenAndKeyPathArguments() async throws {
        let (store, client) = try await Self.store()
        #expect(try await Self.ids(client, "CareEvent", "eventTypeRaw BETWEEN {'feeding', 'insulin'}") == ["e-feeding", "e-insulin"])
        #expect(try await Self.ids(client, "CareEvent", "eventTypeRaw BETWEEN %@", [["a", "g"]]) == ["e-feeding"])
        #expect(try await Self.ids(client, "CareEvent", "NOT (eventTypeRaw BETWEEN {'a', 'm'})") == ["e-bracket", "e-cafe", "e-x", "e-y"])
        #expect(try await Self.ids(client, "CareSession", "events.@count BETWEEN {1, 3}") == ["mochi", "tama"])
        #expect(try await Self.ids(client, "CareSession", "events.@count BETWEEN {0, 0}") == ["empty"])
        #expect(try await Self.ids(client, "CareSession", "ANY events.eventTypeRaw BETWEEN {'f', 'g'}") == ["mochi"])
        #expect(try await Self.ids(client, "CareEvent", "%K == %@", ["eventTypeRaw", "insulin"]) == ["e-insulin"])
        #expect(try await Self.ids(client, "CareSession", "ANY %K ==[c] %@", ["events.note", "CAFÉ"]) == ["mochi"])
        #expect(try await Self.ids(client, "CareEvent", "%K == %@ AND %K BETWEEN %@", ["session.id", "tama", "note", ["a", "x"]]) == ["e-bracket", "e-x"])
        client.close()
        _ = await store.stop()
    }

    /// Nesting is a level of recursion in the parser and the SQL builder: hostile depth within
    /// the 16 KiB length limit crashed the service (8,000 parentheses). It is refused past 100
    /// levels; long flat lists of terms are fine (SQLite's expression depth limit of 1,000 is
    /// kept clear of by balancing them).
    @Test("Parentheses and NOT nest 100 deep at most; a thousand terms joined by AND or OR still run; the service stays up")
    func depthAndLength() async throws {
        let (store, client) = try await Self.store()
        let hundred = String(repeating: "(", count: 100) + "eventTypeRaw == 'insulin'" + String(repeating: ")", count: 100)
        #expect(try await Self.ids(client, "CareEvent", hundred) == ["e-insulin"])
        for hostile in [String(repeating: "(", count: 8000) + "value == 1" + String(repeating: ")", count: 8000),
                        String(repeating: "NOT ", count: 4000) + "value == 1", String(repeating: "!", count: 101) + "value == 1"] {
            let error = try await client.failure("fetch", ["entity": "CareEvent", "predicate": .string(hostile)])
            #expect(error.code == "invalidPredicate")
            #expect(error.message.contains("nested deeper than 100 levels"), "\(error.message)")
        }
        let manyAnd = "id != 'z'" + String(repeating: " AND id != 'z'", count: 999)
        #expect(try await Self.ids(client, "CareEvent", manyAnd).count == 6)
        let manyOr = "id == 'z'" + String(repeating: " OR id == 'z'", count: 998) + " OR id == 'e-x'"
        #expect(try await Self.ids(client, "CareEvent", manyOr) == ["e-x"])
        #expect(try await Self.ids(client, "CareEvent", "id == 'e-y'") == ["e-y"])
        client.close()
        _ = await store.stop()
    }
}
