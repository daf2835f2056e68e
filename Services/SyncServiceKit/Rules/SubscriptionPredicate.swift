import MeowWire

/// A query subscription's predicate: `TRUEPREDICATE`, or comparisons of a record's fields with
/// literals joined by `AND` — `CD_value > 200`, `CD_eventTypeRaw == "insulin" AND CD_value >= 1`.
/// Operators `==` (or `=`), `!=`, `<`, `<=`, `>`, `>=`; literals a quoted string ("…" or '…'),
/// a number, `true` or `false`. A record without the field matches only `!=`, as NSPredicate's
/// comparison with nil.
struct SubscriptionPredicate: Sendable, Hashable {
    struct Comparison: Sendable, Hashable {
        var field: String
        var op: String
        var value: JSONValue
    }
    var comparisons: [Comparison]

    static let operators = ["==", "!=", "<=", ">=", "=", "<", ">"]

    /// Parses `text`; invalidArguments naming the character position of what is wrong.
    static func parse(_ text: String) throws -> SubscriptionPredicate {
        let trimmed = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        if trimmed.isEmpty || trimmed.uppercased() == "TRUEPREDICATE" { return SubscriptionPredicate(comparisons: []) }
        var scanner = Scanner(characters: Array(text))
        var comparisons: [Comparison] = []
        repeat {
            scanner.skipSpaces()
            let field = scanner.word()
            guard !field.isEmpty else { throw scanner.failure("expected a field name", in: text) }
            scanner.skipSpaces()
            guard let op = operators.first(where: { scanner.consume($0) }) else {
                throw scanner.failure("expected an operator (==, !=, <, <=, >, >=) after '\(field)'", in: text)
            }
            scanner.skipSpaces()
            guard let value = scanner.literal() else {
                throw scanner.failure("expected a value (a quoted string, a number, true or false)", in: text)
            }
            comparisons.append(Comparison(field: field, op: op == "=" ? "==" : op, value: value))
            scanner.skipSpaces()
        } while scanner.consumeKeyword("AND")
        guard scanner.atEnd else { throw scanner.failure("expected AND or the end of the predicate", in: text) }
        return SubscriptionPredicate(comparisons: comparisons)
    }

    /// Whether a record with these fields (`{"name": {"type", "value"}}`) matches.
    func matches(_ fields: [String: JSONValue]) -> Bool {
        comparisons.allSatisfy { comparison in
            guard let value = fields[comparison.field]?["value"], !value.isNull else { return comparison.op == "!=" }
            return Self.compare(value, comparison.op, comparison.value)
        }
    }

    static func compare(_ left: JSONValue, _ op: String, _ right: JSONValue) -> Bool {
        let order: Int?
        switch (left, right) {
        case let (.string(a), .string(b)): order = a == b ? 0 : (a < b ? -1 : 1)
        case let (.bool(a), .bool(b)): order = a == b ? 0 : nil
        default:
            if let a = left.doubleValue, let b = right.doubleValue { order = a == b ? 0 : (a < b ? -1 : 1) } else { order = nil }
        }
        guard let order else { return op == "!=" }
        switch op {
        case "==": return order == 0
        case "!=": return order != 0
        case "<": return order < 0
        case "<=": return order <= 0
        case ">": return order > 0
        default: return order >= 0
        }
    }

    private struct Scanner {
        let characters: [Character]
        var index = 0

        var atEnd: Bool { index >= characters.count }

        func failure(_ message: String, in text: String) -> WireError {
            WireError(.invalidArguments, "Malformed predicate at character \(index + 1) of '\(text)': \(message). Use TRUEPREDICATE or comparisons such as CD_value > 200 joined by AND.",
                      details: ["position": .int(index + 1)])
        }

        mutating func skipSpaces() { while !atEnd, characters[index].isWhitespace { index += 1 } }

        mutating func word() -> String {
            var word = ""
            while !atEnd, characters[index].isLetter || characters[index].isNumber || characters[index] == "_" || characters[index] == "." {
                word.append(characters[index])
                index += 1
            }
            return word
        }

        mutating func consume(_ token: String) -> Bool {
            let wanted = Array(token)
            guard index + wanted.count <= characters.count, Array(characters[index..<index + wanted.count]) == wanted else { return false }
            index += wanted.count
            return true
        }

        mutating func consumeKeyword(_ keyword: String) -> Bool {
            let start = index
            if word().uppercased() == keyword { return true }
            index = start
            return false
        }

        mutating func literal() -> JSONValue? {
            guard !atEnd else { return nil }
            let quote = characters[index]
            if quote == "\"" || quote == "'" {
                var text = ""
                var position = index + 1
                while position < characters.count, characters[position] != quote {
                    text.append(characters[position])
                    position += 1
                }
                guard position < characters.count else { return nil }
                index = position + 1
                return .string(text)
            }
            let start = index
            let word = word()
            switch word.lowercased() {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: break
            }
            index = start
            var number = ""
            while !atEnd, characters[index].isNumber || "+-.eE".contains(characters[index]) {
                number.append(characters[index])
                index += 1
            }
            guard let value = Double(number) else { index = start; return nil }
            return .double(value)
        }
    }
}
