import Foundation
import MeowWire
import Testing

/// Seeded random predicates against a store of events with random (and nil) notes, values and
/// types: the service's SQL must select exactly what NSPredicate's in-memory meaning selects, as
/// a small evaluator here computes it (nil compares false, `!=` true; `[c]` folds case; an empty
/// string operand is in nothing; NOT is the complement).
@Suite("Fetch predicates: random predicates select what NSPredicate's meaning selects")
struct PredicatePropertyTests {
    struct Event {
        var id: String
        var note: String?
        var value: Double?
        var type: String
    }

    /// A predicate as text, with its meaning for one event.
    struct Term {
        var text: String
        var holds: (Event) -> Bool
    }

    static let notes = ["abc", "ABC", "abcd", "Éclair", "éclair", "straße", "STRASSE", "b", "", "x y", "it's"]
    static let types = ["note", "insulin", "feeding", "play"]

    static func fold(_ text: String) -> String { text.uppercased().lowercased() }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "\\'") + "'" }

    /// A string comparison of `note` (or `eventTypeRaw`) with a literal, in NSPredicate's meaning.
    static func stringTerm(_ random: inout SplitMix64) -> Term {
        let onNote = random.next() % 4 != 0
        let key = onNote ? "note" : "eventTypeRaw"
        let pool = onNote ? notes : types + ["NOTE"]
        let literal = pool[Int(random.next() % UInt64(pool.count))]
        let ops = ["==", "!=", "<", "<=", ">", ">=", "BEGINSWITH", "ENDSWITH", "CONTAINS"]
        let op = ops[Int(random.next() % UInt64(ops.count))]
        let folds = random.next() % 3 == 0 && !["<", "<=", ">", ">="].contains(op)
        let text = "\(key) \(op)\(folds ? "[c]" : "") \(quoted(literal))"
        return Term(text: text) { event in
            guard let raw = onNote ? event.note : event.type else { return op == "!=" }
            let value = folds ? fold(raw) : raw
            let operand = folds ? fold(literal) : literal
            switch op {
            case "==": return value == operand
            case "!=": return value != operand
            case "<": return Array(value.utf8).lexicographicallyPrecedes(Array(operand.utf8))
            case "<=": return !Array(operand.utf8).lexicographicallyPrecedes(Array(value.utf8))
            case ">": return Array(operand.utf8).lexicographicallyPrecedes(Array(value.utf8))
            case ">=": return !Array(value.utf8).lexicographicallyPrecedes(Array(operand.utf8))
            case "BEGINSWITH": return !operand.isEmpty && Array(value.utf8).starts(with: Array(operand.utf8))
            case "ENDSWITH": return !operand.isEmpty && Array(value.utf8).reversed().starts(with: Array(operand.utf8).reversed())
            default: return !operand.isEmpty && value.utf8.count >= operand.utf8.count
                && (0...(value.utf8.count - operand.utf8.count)).contains { Array(value.utf8).dropFirst($0).starts(with: Array(operand.utf8)) }
            }
        }
    }

    static func numberTerm(_ random: inout SplitMix64) -> Term {
        let literal = Double(random.next() % 300)
        let ops = ["==", "!=", "<", "<=", ">", ">="]
        let op = ops[Int(random.next() % UInt64(ops.count))]
        return Term(text: "value \(op) \(Int(literal))") { event in
            guard let value = event.value else { return op == "!=" }
            switch op {
            case "==": return value == literal
            case "!=": return value != literal
            case "<": return value < literal
            case "<=": return value <= literal
            case ">": return value > literal
            default: return value >= literal
            }
        }
    }

    static func term(_ random: inout SplitMix64, depth: Int) -> Term {
        let roll = random.next() % 100
        if depth < 3 && roll < 30 {
            let left = term(&random, depth: depth + 1), right = term(&random, depth: depth + 1)
            if roll < 15 { return Term(text: "(\(left.text) AND \(right.text))") { left.holds($0) && right.holds($0) } }
            return Term(text: "(\(left.text) OR \(right.text))") { left.holds($0) || right.holds($0) }
        }
        if depth < 3 && roll < 42 {
            let inner = term(&random, depth: depth + 1)
            return Term(text: "NOT (\(inner.text))") { !inner.holds($0) }
        }
        if roll < 50 {
            let isNil = random.next() % 2 == 0
            let key = random.next() % 2 == 0 ? "note" : "value"
            return Term(text: "\(key) \(isNil ? "==" : "!=") nil") { event in
                let present = key == "note" ? event.note != nil : event.value != nil
                return isNil ? !present : present
            }
        }
        if roll < 58 {
            let picked = (0..<(1 + random.next() % 3)).map { _ in notes[Int(random.next() % UInt64(notes.count))] }
            return Term(text: "note IN {\(picked.map(quoted).joined(separator: ", "))}") { event in
                event.note.map(picked.contains) ?? false
            }
        }
        return roll < 80 ? stringTerm(&random) : numberTerm(&random)
    }

    @Test("seeded predicates over seeded events: the fetch selects exactly the events the predicate's meaning holds for",
          arguments: [1, 2, 3] as [UInt64])
    func randomPredicatesSelectWhatTheirMeaningSelects(seed: UInt64) async throws {
        var random = SplitMix64(state: seed)
        let store = try await StoreFixture.start(["--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        var events: [Event] = []
        for index in 0..<40 {
            let note = random.next() % 5 == 0 ? nil : Self.notes[Int(random.next() % UInt64(Self.notes.count))]
            let value = random.next() % 4 == 0 ? nil : Double(random.next() % 300)
            let event = Event(id: String(format: "e%02d", index), note: note, value: value, type: Self.types[Int(random.next() % UInt64(Self.types.count))])
            events.append(event)
            var values: [String: JSONValue] = ["note": note.map(JSONValue.string) ?? .null, "value": value.map(JSONValue.double) ?? .null,
                                               "eventTypeRaw": .string(event.type)]
            if note == nil { values["note"] = .null }
            _ = try await client.insertEvent(context, id: event.id, extra: values)
        }
        _ = try await client.save(context)

        for _ in 0..<250 {
            let term = Self.term(&random, depth: 0)
            let result = try await client.call("fetch", ["entity": "CareEvent", "predicate": .string(term.text), "sortDescriptors": [["key": "id"]]])
            let fetched = result["objects"]?.arrayValue?.compactMap { $0["values"]?["id"]?.stringValue } ?? []
            let expected = events.filter(term.holds).map(\.id)
            #expect(fetched == expected, "seed \(seed): \(term.text) fetched \(fetched), its meaning selects \(expected)")
        }
        client.close()
        _ = await store.stop()
    }
}
