import Foundation
import MeowWire
import Testing

/// Seeded random predicates against a store of events with random (and nil) notes, values and
/// types: the service's SQL must select exactly what NSPredicate's in-memory meaning selects, as
/// a small evaluator here computes it (nil compares false, `!=` true; `[c]` folds case, `[d]`
/// diacritics; an empty string operand is in nothing; LIKE's `*` and `?` match code points;
/// NOT is the complement).
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

    static let notes = ["abc", "ABC", "abcd", "Éclair", "éclair", "e\u{301}clair", "Cafe", "café", "straße", "STRASSE", "b", "", "x y", "it's", "a[b]"]
    static let types = ["note", "insulin", "feeding", "play"]

    /// `[c]`, `[d]` or both, as Foundation folds them.
    static func fold(_ text: String, _ modifier: String) -> String {
        var folded = text
        if modifier.contains("d") { folded = folded.folding(options: .diacriticInsensitive, locale: nil) }
        if modifier.contains("c") { folded = folded.uppercased().lowercased() }
        return folded
    }

    /// LIKE: `*` any run of code points, `?` one, anything else itself.
    static func like(_ text: some Collection<Unicode.Scalar>, _ pattern: some Collection<Unicode.Scalar>) -> Bool {
        guard let head = pattern.first else { return text.isEmpty }
        if head == "*" { return like(text, pattern.dropFirst()) || (!text.isEmpty && like(text.dropFirst(), pattern)) }
        guard let first = text.first, head == "?" || head == first else { return false }
        return like(text.dropFirst(), pattern.dropFirst())
    }

    /// A LIKE pattern made from `source`: some code points become `?`, some runs `*`.
    static func pattern(from source: String, _ random: inout SplitMix64) -> String {
        var out = ""
        for scalar in source.unicodeScalars {
            switch random.next() % 8 {
            case 0: out += "?"
            case 1: if !out.hasSuffix("*") { out += "*" }
            default: out.unicodeScalars.append(scalar)
            }
        }
        return random.next() % 4 == 0 ? out + "*" : out
    }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "\\'") + "'" }

    /// A string comparison of `note` (or `eventTypeRaw`) with a literal, in NSPredicate's meaning.
    static func stringTerm(_ random: inout SplitMix64) -> Term {
        let onNote = random.next() % 4 != 0
        let key = onNote ? "note" : "eventTypeRaw"
        let pool = onNote ? notes : types + ["NOTE"]
        let literal = pool[Int(random.next() % UInt64(pool.count))]
        let ops = ["==", "!=", "<", "<=", ">", ">=", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE"]
        let op = ops[Int(random.next() % UInt64(ops.count))]
        let modifier = ["<", "<=", ">", ">="].contains(op) ? "" : ["", "", "", "c", "d", "cd"][Int(random.next() % 6)]
        let operandText = op == "LIKE" ? pattern(from: literal, &random) : literal
        let text = "\(key) \(op)\(modifier.isEmpty ? "" : "[\(modifier)]") \(quoted(operandText))"
        return Term(text: text) { event in
            guard let raw = onNote ? event.note : event.type else { return op == "!=" }
            let value = fold(raw, modifier)
            let operand = fold(operandText, modifier)
            switch op {
            case "LIKE": return like(value.unicodeScalars, operand.unicodeScalars)
            // Bytes, not Swift's canonical equivalence: a decomposed é is not a composed one.
            case "==": return Array(value.utf8) == Array(operand.utf8)
            case "!=": return Array(value.utf8) != Array(operand.utf8)
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
                event.note.map { note in picked.contains { Array($0.utf8) == Array(note.utf8) } } ?? false
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
