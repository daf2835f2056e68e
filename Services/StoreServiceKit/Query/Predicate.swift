import MeowWire
import ServiceRuntime
import SQLiteKit

/// A fetch predicate in a subset of NSPredicate's format language:
/// comparisons (`==` `=` `!=` `<>` `<` `<=` `>` `>=`, `BEGINSWITH` `ENDSWITH` `CONTAINS` `LIKE`
/// `MATCHES`, with an optional `[c]` for case-insensitive, `[d]` for diacritic-insensitive, or
/// `[cd]`), `IN {…}`, `AND`/`&&`, `OR`/`||`, `NOT`/`!`, parentheses, `nil`/`NULL` tests,
/// `TRUEPREDICATE`/`FALSEPREDICATE`, `%@` placeholders filled from `arguments`, key paths
/// through to-one relationships (`session.id`), and to-many relationships with `ANY`/`SOME`,
/// `ALL` or `NONE` (`ANY events.eventTypeRaw == 'insulin'`) or `@count` (`events.@count > 3`).
/// A to-one relationship compares with an object ID string or nil.
///
/// ```swift
/// let p = try Predicate.parse("session.id == %@ AND value > 100", arguments: ["default-session"])
/// ```
indirect enum Predicate: Sendable, Equatable {
    case constant(Bool)
    case and([Predicate])
    case or([Predicate])
    case not(Predicate)
    case compare(keyPath: [String], op: ComparisonOperator, value: JSONValue, options: StringOptions)
    case within(keyPath: [String], values: [JSONValue])
    /// A comparison (or IN) whose key path goes through a to-many relationship, for some, every
    /// or no object of it.
    case quantified(Quantifier, Predicate)
    /// The number of objects of a to-many relationship (`events.@count`) compared with a number.
    case count(keyPath: [String], op: ComparisonOperator, value: JSONValue)

    enum Quantifier: String, Sendable, Equatable { case any = "ANY", all = "ALL", none = "NONE" }

    /// A string comparison's modifiers (`[c]`, `[d]`, `[cd]`).
    struct StringOptions: OptionSet, Sendable, Equatable {
        let rawValue: Int
        static let caseInsensitive = StringOptions(rawValue: Int(CaseFolding.Options.caseInsensitive.rawValue))
        static let diacriticInsensitive = StringOptions(rawValue: Int(CaseFolding.Options.diacriticInsensitive.rawValue))
    }

    enum ComparisonOperator: String, Sendable, Equatable {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE", matches = "MATCHES"
    }

    static func parse(_ text: String, arguments: [JSONValue] = []) throws -> Predicate {
        var parser = PredicateParser(text: text, arguments: arguments)
        return try parser.parseAll()
    }
}

func predicateError(_ message: String, _ text: String, at offset: Int? = nil) -> ServiceError {
    var details: [String: JSONValue] = ["predicate": .string(text)]
    if let offset { details["offset"] = .int(offset) }
    return ServiceError(.invalidPredicate, "Invalid predicate: \(message)", details: details)
}

private struct PredicateParser {
    enum Token: Equatable {
        case word(String)       // identifiers, key paths and keywords
        case string(String)
        case number(JSONValue)
        case symbol(String)     // == != < <= > >= = <> ( ) { } , && || !
        case modifier(Predicate.StringOptions)  // [c] [d] [cd]
        case placeholder
        /// `%K`: the next argument, a key path.
        case keyPathPlaceholder
        case end
    }

    let text: String
    var arguments: [JSONValue]
    var tokens: [(Token, Int)] = []
    var position = 0
    var argumentIndex = 0
    /// Parentheses and NOTs open around the term being parsed: each is a level of recursion
    /// here and when the predicate is built into SQL, so a hostile predicate could exhaust the
    /// connection thread's stack (8,000 parentheses within the length limit crashed the service).
    var depth = 0
    static let maxDepth = 100

    init(text: String, arguments: [JSONValue]) {
        self.text = text
        self.arguments = arguments
    }

    mutating func parseAll() throws -> Predicate {
        guard text.utf8.count <= 16_384 else { throw predicateError("longer than 16384 bytes.", String(text.prefix(64))) }
        try tokenize()
        let result = try parseOr()
        guard case .end = current else { throw predicateError("unexpected \(describe(current)) after a complete predicate.", text, at: offset) }
        guard argumentIndex == arguments.count else {
            throw predicateError("\(arguments.count) arguments given but the predicate has \(argumentIndex) placeholders (%@, %K).", text)
        }
        return result
    }

    var current: Token { tokens[position].0 }
    var offset: Int { tokens[position].1 }

    func describe(_ token: Token) -> String {
        switch token {
        case let .word(word): return "'\(word)'"
        case let .string(text): return "the string \"\(text)\""
        case .number: return "a number"
        case let .symbol(symbol): return "'\(symbol)'"
        case .modifier: return "a modifier ([c], [d], [cd])"
        case .placeholder: return "%@"
        case .keyPathPlaceholder: return "%K"
        case .end: return "the end"
        }
    }

    mutating func tokenize() throws {
        let bytes = Array(text.utf8)
        var index = 0
        func isWordByte(_ b: UInt8) -> Bool {
            b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: "@") || (b >= 48 && b <= 57) || ((b | 0x20) >= 97 && (b | 0x20) <= 122) || b >= 0x80
        }
        while index < bytes.count {
            let byte = bytes[index]
            let start = index
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1; continue }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                var value: [UInt8] = []
                index += 1
                var closed = false
                while index < bytes.count {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count { value.append(bytes[index + 1]); index += 2; continue }
                    if bytes[index] == byte { closed = true; index += 1; break }
                    value.append(bytes[index]); index += 1
                }
                guard closed else { throw predicateError("a string starting at offset \(start) is not closed.", text, at: start) }
                tokens.append((.string(String(decoding: value, as: UTF8.self)), start))
                continue
            }
            if (byte >= 48 && byte <= 57) || (byte == UInt8(ascii: "-") && index + 1 < bytes.count && bytes[index + 1] >= 48 && bytes[index + 1] <= 57) {
                index += 1
                while index < bytes.count, (bytes[index] >= 48 && bytes[index] <= 57) || bytes[index] == UInt8(ascii: ".") || (bytes[index] | 0x20) == UInt8(ascii: "e") { index += 1 }
                let literal = String(decoding: bytes[start..<index], as: UTF8.self)
                if let integer = Int(literal) { tokens.append((.number(.int(integer)), start)) }
                else if let real = Double(literal) { tokens.append((.number(.double(real)), start)) }
                else { throw predicateError("'\(literal)' is not a number.", text, at: start) }
                continue
            }
            if byte == UInt8(ascii: "%"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "@") {
                tokens.append((.placeholder, start)); index += 2; continue
            }
            if byte == UInt8(ascii: "%"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "K") {
                tokens.append((.keyPathPlaceholder, start)); index += 2; continue
            }
            if byte == UInt8(ascii: "["), let close = bytes[index...].firstIndex(of: UInt8(ascii: "]")) {
                let flags = String(decoding: bytes[(index + 1)..<close], as: UTF8.self).lowercased()
                var options: Predicate.StringOptions = []
                for flag in flags {
                    switch flag {
                    case "c": options.insert(.caseInsensitive)
                    case "d": options.insert(.diacriticInsensitive)
                    default: throw predicateError("unknown modifier [\(flags)]; use [c], [d] or [cd].", text, at: start)
                    }
                }
                if options.isEmpty { throw predicateError("empty modifier []; use [c], [d] or [cd].", text, at: start) }
                tokens.append((.modifier(options), start)); index = close + 1; continue
            }
            let two = index + 1 < bytes.count ? String(decoding: bytes[index...(index + 1)], as: UTF8.self) : ""
            if ["==", "!=", "<=", ">=", "<>", "&&", "||", "=<", "=>"].contains(two) {
                let normal = ["=<": "<=", "=>": ">=", "<>": "!="][two] ?? two
                tokens.append((.symbol(normal), start)); index += 2; continue
            }
            if "=<>(){},!".utf8.contains(byte) {
                tokens.append((.symbol(byte == UInt8(ascii: "=") ? "==" : String(UnicodeScalar(byte))), start)); index += 1; continue
            }
            if isWordByte(byte) {
                while index < bytes.count, isWordByte(bytes[index]) { index += 1 }
                tokens.append((.word(String(decoding: bytes[start..<index], as: UTF8.self)), start))
                continue
            }
            throw predicateError("unexpected character '\(String(decoding: [byte], as: UTF8.self))' at offset \(start).", text, at: start)
        }
        tokens.append((.end, bytes.count))
    }

    func isKeyword(_ token: Token, _ words: String...) -> Bool {
        if case let .word(word) = token { return words.contains(word.uppercased()) }
        return false
    }

    mutating func parseOr() throws -> Predicate {
        var terms = [try parseAnd()]
        while isKeyword(current, "OR") || current == .symbol("||") { position += 1; terms.append(try parseAnd()) }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    mutating func parseAnd() throws -> Predicate {
        var terms = [try parseNot()]
        while isKeyword(current, "AND") || current == .symbol("&&") { position += 1; terms.append(try parseNot()) }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    mutating func parseNot() throws -> Predicate {
        if isKeyword(current, "NOT") || current == .symbol("!") {
            position += 1
            return .not(try nested { try $0.parseNot() })
        }
        return try parsePrimary()
    }

    /// One level deeper (`maxDepth`).
    mutating func nested(_ body: (inout PredicateParser) throws -> Predicate) throws -> Predicate {
        guard depth < Self.maxDepth else {
            throw predicateError("nested deeper than \(Self.maxDepth) levels of parentheses and NOT, at offset \(offset).", text, at: offset)
        }
        depth += 1
        defer { depth -= 1 }
        return try body(&self)
    }

    mutating func parsePrimary() throws -> Predicate {
        if current == .symbol("(") {
            position += 1
            let inner = try nested { try $0.parseOr() }
            guard current == .symbol(")") else { throw predicateError("expected ')' at offset \(offset), found \(describe(current)).", text, at: offset) }
            position += 1
            return inner
        }
        if isKeyword(current, "TRUEPREDICATE") { position += 1; return .constant(true) }
        if isKeyword(current, "FALSEPREDICATE") { position += 1; return .constant(false) }
        if case let .word(word) = current, let quantifier = ["ANY": Predicate.Quantifier.any, "SOME": .any, "ALL": .all, "NONE": .none][word.uppercased()] {
            position += 1
            let term = try parseComparison()
            if case .count = term { throw predicateError("\(quantifier.rawValue) takes a key path to compare, not @count.", text, at: offset) }
            return .quantified(quantifier, term)
        }
        return try parseComparison()
    }

    /// A key path (or `%K` and a key path argument), an operator (or IN, or BETWEEN) and a value.
    mutating func parseComparison() throws -> Predicate {
        let path: String
        switch current {
        case let .word(word) where !isKeyword(current, "AND", "OR", "NOT", "IN", "BETWEEN", "ANY", "SOME", "ALL", "NONE"):
            path = word
        case .keyPathPlaceholder:
            // Resolved against the model like a written key path: an argument names a property,
            // it never reaches the SQL as text.
            let argument = try takeArgument()
            guard case let .string(named) = argument else {
                throw predicateError("the argument for %K at offset \(offset) must be a key path string, not \(JSONWriter.text(argument).prefix(80)).", text, at: offset)
            }
            path = named
        default:
            throw predicateError("expected a key path at offset \(offset), found \(describe(current)).", text, at: offset)
        }
        let keyPath = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard keyPath.allSatisfy({ !$0.isEmpty }) else { throw predicateError("'\(path)' is not a key path.", text, at: offset) }
        if let aggregate = keyPath.firstIndex(where: { $0.hasPrefix("@") }) {
            guard keyPath[aggregate] == "@count", aggregate == keyPath.count - 1, aggregate > 0 else {
                throw predicateError("'\(path)': the only aggregate is @count, last in a key path to a to-many relationship (events.@count).", text, at: offset)
            }
        }
        position += 1
        if isKeyword(current, "IN") {
            position += 1
            return .within(keyPath: keyPath, values: try parseList())
        }
        if isKeyword(current, "BETWEEN") {
            // NSPredicate's BETWEEN {low, high}: low <= value <= high, both ends included.
            let at = offset
            position += 1
            let bounds = try parseList()
            guard bounds.count == 2 else {
                throw predicateError("BETWEEN takes two values, {low, high}; got \(bounds.count).", text, at: at)
            }
            if keyPath.last == "@count" {
                let counted = Array(keyPath.dropLast())
                return .and([.count(keyPath: counted, op: .greaterOrEqual, value: bounds[0]), .count(keyPath: counted, op: .lessOrEqual, value: bounds[1])])
            }
            return .and([.compare(keyPath: keyPath, op: .greaterOrEqual, value: bounds[0], options: []),
                         .compare(keyPath: keyPath, op: .lessOrEqual, value: bounds[1], options: [])])
        }
        let op: ComparisonOperatorParse
        switch current {
        case let .symbol(symbol) where ["==", "!=", "<", "<=", ">", ">="].contains(symbol):
            op = .init(Predicate.ComparisonOperator(rawValue: symbol)!)
        case let .word(word) where ["BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES"].contains(word.uppercased()):
            op = .init(Predicate.ComparisonOperator(rawValue: word.uppercased())!)
        default:
            throw predicateError("expected an operator after '\(path)' at offset \(offset), found \(describe(current)).", text, at: offset)
        }
        position += 1
        var options: Predicate.StringOptions = []
        if case let .modifier(modifier) = current { options = modifier; position += 1 }
        let value = try parseValue()
        if keyPath.last == "@count" {
            guard options.isEmpty, ["==", "!=", "<", "<=", ">", ">="].contains(op.op.rawValue) else {
                throw predicateError("'\(path)' is a number: compare it with == != < <= > >=.", text, at: offset)
            }
            return .count(keyPath: Array(keyPath.dropLast()), op: op.op, value: value)
        }
        return .compare(keyPath: keyPath, op: op.op, value: value, options: options)
    }

    struct ComparisonOperatorParse { let op: Predicate.ComparisonOperator; init(_ op: Predicate.ComparisonOperator) { self.op = op } }

    mutating func parseList() throws -> [JSONValue] {
        if current == .placeholder {
            let value = try nextArgument()
            guard case let .array(values) = value else { throw predicateError("the argument for IN %@ must be an array.", text, at: offset) }
            return values
        }
        guard current == .symbol("{") else { throw predicateError("expected '{' or %@ after IN at offset \(offset).", text, at: offset) }
        position += 1
        var values: [JSONValue] = []
        if current == .symbol("}") { position += 1; return values }
        while true {
            values.append(try parseValue())
            if current == .symbol(",") { position += 1; continue }
            guard current == .symbol("}") else { throw predicateError("expected ',' or '}' at offset \(offset), found \(describe(current)).", text, at: offset) }
            position += 1
            return values
        }
    }

    /// The next placeholder's argument (`%@` and `%K` take theirs in order).
    mutating func takeArgument() throws -> JSONValue {
        guard argumentIndex < arguments.count else {
            throw predicateError("the predicate has more placeholders (%@, %K) than the \(arguments.count) arguments given.", text, at: offset)
        }
        argumentIndex += 1
        return arguments[argumentIndex - 1]
    }

    /// A `%@` value: its argument, and past the placeholder.
    mutating func nextArgument() throws -> JSONValue {
        let value = try takeArgument()
        position += 1
        return value
    }

    mutating func parseValue() throws -> JSONValue {
        switch current {
        case let .string(value): position += 1; return .string(value)
        case let .number(value): position += 1; return value
        case .placeholder: return try nextArgument()
        case .word where isKeyword(current, "NIL", "NULL"): position += 1; return .null
        case .word where isKeyword(current, "TRUE", "YES"): position += 1; return .bool(true)
        case .word where isKeyword(current, "FALSE", "NO"): position += 1; return .bool(false)
        default: throw predicateError("expected a value at offset \(offset), found \(describe(current)).", text, at: offset)
        }
    }
}
