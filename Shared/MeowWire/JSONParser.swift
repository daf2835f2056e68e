/// A strict RFC 8259 JSON parser from UTF-8 bytes to `JSONValue`, built on `JSONScanner`'s tokens.
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
        var builder = TreeBuilder(scanner: JSONScanner(buffer))
        builder.scanner.skipWhitespace()
        let value = try builder.value(depth: 0)
        builder.scanner.skipWhitespace()
        guard builder.scanner.index == buffer.count else { throw builder.scanner.failure("unexpected data after the JSON value") }
        return value
    }

    /// Parses a text in place (a stored record's fields: no copy of its bytes).
    public static func parse(_ text: String) throws(Failure) -> JSONValue {
        var text = text
        let parsed = text.withUTF8 { bytes in Result { () throws(Failure) -> JSONValue in try parse(bytes) } }
        return try parsed.get()
    }

    /// The tree of the scanner's tokens: each object and array assembled as it closes.
    private struct TreeBuilder {
        var scanner: JSONScanner
        /// Members of the objects being built, innermost last (see `members(from:)`).
        var pairs: [(key: String, value: JSONValue)] = []

        /// The value at the scanner's index (whitespace already skipped).
        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard scanner.index < scanner.bytes.count else { throw scanner.failure("unexpected end of input") }
            switch scanner.bytes[scanner.index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try scanner.readString())
            case UInt8(ascii: "t"): try scanner.readLiteral("true"); return .bool(true)
            case UInt8(ascii: "f"): try scanner.readLiteral("false"); return .bool(false)
            case UInt8(ascii: "n"): try scanner.readLiteral("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try scanner.readNumber()
            default: throw scanner.failure("unexpected character")
            }
        }

        mutating func object(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw scanner.failure("nesting deeper than \(JSONParser.maxDepth) levels") }
            scanner.index += 1
            let first = pairs.count
            var key = try scanner.readKey(first: true)
            while let name = key {
                scanner.skipWhitespace()
                pairs.append((name, try value(depth: depth)))
                key = try scanner.readKey(first: false)
            }
            return .object(members(from: first))
        }

        /// The members built since `first`, as one dictionary made with room for all of them
        /// (growing it member by member rehashed it several times per record).
        @inline(never)
        mutating func members(from first: Int) -> [String: JSONValue] {
            var members = [String: JSONValue](minimumCapacity: pairs.count - first)
            for index in first..<pairs.count { members[pairs[index].key] = pairs[index].value }
            pairs.removeSubrange(first...)
            return members
        }

        mutating func array(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw scanner.failure("nesting deeper than \(JSONParser.maxDepth) levels") }
            scanner.index += 1
            var elements: [JSONValue] = []
            var more = try scanner.readElement(first: true)
            while more {
                scanner.skipWhitespace()
                elements.append(try value(depth: depth))
                more = try scanner.readElement(first: false)
            }
            return .array(elements)
        }
    }
}
