/// A strict RFC 8259 JSON parser from UTF-8 bytes to `JSONValue`.
///
/// Why our own: Foundation's `JSONDecoder` walks a request twice (a scan, then Codable over its
/// own tree) and every `try?` type probe throws an error; a 1,000-object insert spent most of its
/// decoding there. This parser makes one pass over the bytes, and `JSONValueDecoder` then decodes
/// typed params from the tree without probing (a `JSONValue` field is taken as is).
///
/// Rules: one value, surrounded only by JSON whitespace; strings must be valid UTF-8 with no raw
/// control characters and well-formed escapes (a lone surrogate is an error); numbers follow the
/// JSON grammar — without fraction or exponent they are `.int` when they fit in `Int`, otherwise
/// `.double`, and a number too large for a `Double` is an error; nesting is limited to
/// `maxDepth` (Foundation's limit is 512 too), so hostile input cannot exhaust the stack; for a
/// repeated key in one object the last value wins.
public enum JSONParser {
    public static let maxDepth = 512

    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(Failure) -> JSONValue in try parse(buffer) }
    }

    /// Parses bytes in place (a value `JSONStream` has read into its buffer).
    public static func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws(Failure) -> JSONValue {
        var reader = Reader(bytes: buffer)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == buffer.count else { throw reader.failure("unexpected data after the JSON value") }
        return value
    }

    /// Parses a text in place (a stored record's fields: no copy of its bytes).
    public static func parse(_ text: String) throws(Failure) -> JSONValue {
        var text = text
        let parsed = text.withUTF8 { bytes in Result { () throws(Failure) -> JSONValue in try parse(bytes) } }
        return try parsed.get()
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        /// Scratch for strings with escapes, reused so a big request allocates it once.
        var scratch: [UInt8] = []
        /// Members of the objects being parsed, innermost last (see `members(from:)`).
        var pairs: [(key: String, value: JSONValue)] = []

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func failure(_ reason: String) -> Failure { Failure(offset: index, reason: reason) }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard index < bytes.count else { throw failure("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw failure("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { throw failure("unexpected end of input") }
            let start = word.utf8Start
            for offset in 0..<count where bytes[index + offset] != start[offset] { throw failure("invalid literal") }
            index += count
        }

        mutating func object(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw failure("nesting deeper than \(JSONParser.maxDepth) levels") }
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object([:]) }
            let first = pairs.count
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a string key") }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':' after a key") }
                index += 1
                skipWhitespace()
                pairs.append((key, try value(depth: depth)))
                skipWhitespace()
                guard index < bytes.count else { throw failure("unexpected end of input in an object") }
                switch bytes[index] {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): index += 1; return .object(members(from: first))
                default: throw failure("expected ',' or '}' in an object")
                }
            }
        }

        /// The members parsed since `first`, as one dictionary made with room for all of them
        /// (growing it member by member rehashed it several times per record).
        @inline(never)
        mutating func members(from first: Int) -> [String: JSONValue] {
            var members = [String: JSONValue](minimumCapacity: pairs.count - first)
            for index in first..<pairs.count { members[pairs[index].key] = pairs[index].value }
            pairs.removeSubrange(first...)
            return members
        }

        mutating func array(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw failure("nesting deeper than \(JSONParser.maxDepth) levels") }
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth))
                skipWhitespace()
                guard index < bytes.count else { throw failure("unexpected end of input in an array") }
                switch bytes[index] {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"): index += 1; return .array(elements)
                default: throw failure("expected ',' or ']' in an array")
                }
            }
        }

        /// At the opening quote; leaves the index after the closing one.
        mutating func string() throws(Failure) -> String {
            index += 1
            let start = index
            var ascii = true
            // Fast path: no escapes. Most strings in requests are plain ASCII.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    return try makeString(slice, ascii: ascii, at: start)
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { throw failure("unescaped control character in a string") }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
            guard index < bytes.count else { throw Failure(offset: start - 1, reason: "unterminated string") }
            // Slow path: copy with escapes decoded.
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return try scratch.withUnsafeBufferPointer { (buffer) throws(Failure) -> String in
                        try makeString(buffer, ascii: ascii, at: start)
                    }
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { throw failure("unterminated escape") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(escape)
                    case UInt8(ascii: "b"): scratch.append(0x08)
                    case UInt8(ascii: "f"): scratch.append(0x0C)
                    case UInt8(ascii: "n"): scratch.append(0x0A)
                    case UInt8(ascii: "r"): scratch.append(0x0D)
                    case UInt8(ascii: "t"): scratch.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                throw failure("a high surrogate must be followed by a low surrogate escape")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw failure("invalid low surrogate") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(scalar) {
                            throw failure("lone low surrogate")
                        }
                        appendUTF8(scalar)
                        if scalar >= 0x80 { ascii = false }
                    default: throw failure("invalid escape")
                    }
                default:
                    if byte < 0x20 { throw failure("unescaped control character in a string") }
                    if byte >= 0x80 { ascii = false }
                    scratch.append(byte)
                    index += 1
                }
            }
            throw Failure(offset: start - 1, reason: "unterminated string")
        }

        func makeString(_ slice: UnsafeBufferPointer<UInt8>, ascii: Bool, at start: Int) throws(Failure) -> String {
            if ascii { return String(decoding: slice, as: UTF8.self) }
            guard let text = String(validating: slice, as: UTF8.self) else { throw Failure(offset: start, reason: "invalid UTF-8 in a string") }
            return text
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard bytes.count - index >= 4 else { throw failure("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw failure("invalid hex digit in a \\u escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        mutating func appendUTF8(_ scalar: UInt32) {
            switch scalar {
            case 0..<0x80: scratch.append(UInt8(scalar))
            case 0x80..<0x800:
                scratch.append(UInt8(0xC0 | (scalar >> 6)))
                scratch.append(UInt8(0x80 | (scalar & 0x3F)))
            case 0x800..<0x10000:
                scratch.append(UInt8(0xE0 | (scalar >> 12)))
                scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
                scratch.append(UInt8(0x80 | (scalar & 0x3F)))
            default:
                scratch.append(UInt8(0xF0 | (scalar >> 18)))
                scratch.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
                scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
                scratch.append(UInt8(0x80 | (scalar & 0x3F)))
            }
        }

        mutating func number() throws(Failure) -> JSONValue {
            let start = index
            var negative = false
            if bytes[index] == UInt8(ascii: "-") { negative = true; index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("a number needs digits") }
            // Accumulate as a negative value so Int.min parses; overflow falls back to Double.
            var accumulated = 0
            var overflow = false
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if index < bytes.count, isDigit(bytes[index]) { throw failure("leading zeros are not allowed") }
            } else {
                while index < bytes.count, isDigit(bytes[index]) {
                    let digit = Int(bytes[index] - UInt8(ascii: "0"))
                    if !overflow {
                        let (times, o1) = accumulated.multipliedReportingOverflow(by: 10)
                        let (next, o2) = times.subtractingReportingOverflow(digit)
                        if o1 || o2 { overflow = true } else { accumulated = next }
                    }
                    index += 1
                }
            }
            var integral = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw failure("a fraction needs digits") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                integral = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard index < bytes.count, isDigit(bytes[index]) else { throw failure("an exponent needs digits") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if integral, !overflow {
                if negative { return .int(accumulated) }
                if accumulated != Int.min { return .int(-accumulated) }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let number = Double(text), number.isFinite else {
                throw Failure(offset: start, reason: "number \(text.prefix(40)) is out of range")
            }
            return .double(number)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    }
}
