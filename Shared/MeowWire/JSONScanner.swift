/// A forward-only reader over JSON bytes, for the few hot replies and requests whose shape is
/// known: a decoder walks the members it expects and keeps what it reads, with no `JSONValue`
/// tree in between (a fetched page of 1,000 records would otherwise be 3,000 dictionaries built
/// only to be read once).
///
/// Every method answers nil or false at anything it does not expect, and never reads outside
/// the buffer; `MessageReader` turns such an answer into an error naming where it stood. What
/// the scanner accepts it reads as `JSONParser` would: strings with escapes go through the
/// parser, and skipped values are checked against the same grammar.
///
/// ```swift
/// var scanner = JSONScanner(bytes)
/// var token: String?
/// let read = scanner.object { key, scanner in
///     switch key {
///     case "token": token = scanner.string(); return token != nil
///     default: return scanner.skipValue()
///     }
/// }
/// guard read, scanner.atEnd, let token else { return nil }
/// ```
public struct JSONScanner {
    public let bytes: UnsafeBufferPointer<UInt8>
    public private(set) var index = 0
    /// Whether the object being walked ended cleanly (`nextKey` answered nil at its `}`); a nil
    /// from `nextKey` with this false is malformed input.
    public private(set) var finishedObject = false

    public init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Whether only whitespace is left.
    public var atEnd: Bool {
        mutating get { skipWhitespace(); return index == bytes.count }
    }

    public mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// Back to `index` (one this scanner was at), to read the value there again another way.
    public mutating func rewind(to index: Int) {
        precondition(index <= self.index)
        self.index = index
    }

    /// The next byte after whitespace, not consumed.
    public mutating func peek() -> UInt8? {
        skipWhitespace()
        return index < bytes.count ? bytes[index] : nil
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    // MARK: Objects and arrays

    /// Consumes `{`; walk the members with `nextKey`.
    public mutating func beginObject() -> Bool {
        finishedObject = false
        return take(UInt8(ascii: "{")) && markFirst()
    }

    /// The next member's key, its `:` consumed (read its value next); nil at the object's end
    /// (`finishedObject` says whether it ended cleanly) or at anything else.
    public mutating func nextKey() -> String? {
        finishedObject = false
        guard let follows = step(closing: UInt8(ascii: "}")) else { return nil }
        guard follows else {
            finishedObject = true
            return nil
        }
        guard peek() == UInt8(ascii: "\""), let key = string(), take(UInt8(ascii: ":")) else { return nil }
        return key
    }

    /// Consumes `[`; walk the elements with `nextElement`.
    public mutating func beginArray() -> Bool {
        take(UInt8(ascii: "[")) && markFirst()
    }

    /// Whether another element follows (its `,` consumed); false at the array's end (its `]`
    /// consumed: `finishedArray` true) or at anything else.
    public mutating func nextElement() -> Bool {
        finishedArray = false
        guard let follows = step(closing: UInt8(ascii: "]")) else { return false }
        finishedArray = !follows
        return follows
    }

    /// Past what stands between a container's members or elements: true when another follows
    /// (its `,` consumed unless it is the first), false at `closing` (consumed), nil at anything
    /// else. Either way the container that holds this one has had a member now.
    private mutating func step(closing: UInt8) -> Bool? {
        guard let next = peek() else { return nil }
        if next == closing {
            index += 1
            first = false
            return false
        }
        if !first {
            guard next == UInt8(ascii: ",") else { return nil }
            index += 1
        }
        first = false
        return true
    }

    /// Whether the array being walked ended cleanly.
    public private(set) var finishedArray = false
    /// Whether the container just begun has had no member or element yet. A nested container
    /// is walked to its end before its parent's next member, so one flag serves every level:
    /// when a nested one ends, the parent has had at least that member.
    private var first = true

    private mutating func markFirst() -> Bool {
        first = true
        return true
    }

    /// Walks an object: `member` reads the value of each member (given its key) and answers
    /// whether it could; false at the first it could not, or when the object is not well formed.
    public mutating func object(_ member: (_ key: String, _ scanner: inout JSONScanner) -> Bool) -> Bool {
        guard beginObject() else { return false }
        while let key = nextKey() {
            guard member(key, &self) else { return false }
        }
        return finishedObject
    }

    /// Walks an array: `element` reads each element and answers whether it could.
    public mutating func array(_ element: (_ scanner: inout JSONScanner) -> Bool) -> Bool {
        guard beginArray() else { return false }
        while nextElement() {
            guard element(&self) else { return false }
        }
        return finishedArray
    }

    // MARK: Values

    /// A string value (escapes decoded exactly as `JSONParser` decodes them).
    public mutating func string() -> String? {
        guard peek() == UInt8(ascii: "\"") else { return nil }
        let start = index
        index += 1
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let contents = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<index])
                index += 1
                // Non-ASCII text is checked as the parser checks it (invalid UTF-8 is refused).
                return ascii ? String(decoding: contents, as: UTF8.self) : String(validating: contents, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                // Escapes are rare here: the parser decodes the whole string.
                guard let end = Self.stringEnd(bytes, from: start) else { return nil }
                index = end
                return reparsedString(from: start)
            }
            if byte < 0x20 { return nil }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        return nil
    }

    private func reparsedString(from start: Int) -> String? {
        guard case let .string(value)? = try? JSONParser.parse(Array(bytes[start..<index])) else { return nil }
        return value
    }

    /// A string or JSON null (nil for null: `.some(nil)`); nil for anything else.
    public mutating func optionalString() -> String?? {
        if peek() == UInt8(ascii: "n") { return literal("null") ? .some(nil) : nil }
        return string().map { .some($0) }
    }

    /// `true` or `false`.
    public mutating func bool() -> Bool? {
        switch peek() {
        case UInt8(ascii: "t"): return literal("true") ? true : nil
        case UInt8(ascii: "f"): return literal("false") ? false : nil
        default: return nil
        }
    }

    /// The bytes of the value starting here, consumed when `end` (given the buffer and the
    /// value's first index) answers its end: for values a caller keeps as text.
    public mutating func text(endingWith end: (UnsafeBufferPointer<UInt8>, Int) -> Int?) -> UnsafeBufferPointer<UInt8>? {
        skipWhitespace()
        let start = index
        guard start < bytes.count, let stop = end(bytes, start), stop > start, stop <= bytes.count else { return nil }
        index = stop
        return UnsafeBufferPointer(rebasing: bytes[start..<stop])
    }

    /// Skips one value of any kind, checking it against the JSON grammar (nesting at most
    /// `JSONParser.maxDepth` deep).
    public mutating func skipValue() -> Bool {
        skipValue(depth: 0)
    }

    private mutating func skipValue(depth: Int) -> Bool {
        guard let next = peek() else { return false }
        switch next {
        case UInt8(ascii: "\""):
            guard let end = Self.stringEnd(bytes, from: index) else { return false }
            // Non-ASCII or escaped text is checked by the parser (UTF-8, escapes, surrogates).
            let plain = !bytes[(index + 1)..<(end - 1)].contains { $0 >= 0x80 || $0 == UInt8(ascii: "\\") }
            let start = index
            index = end
            return plain || reparsedString(from: start) != nil
        case UInt8(ascii: "{"):
            return depth < JSONParser.maxDepth && object { _, scanner in scanner.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            return depth < JSONParser.maxDepth && array { scanner in scanner.skipValue(depth: depth + 1) }
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        guard bytes.starts(with: word, at: index) else { return false }
        index += word.utf8CodeUnitCount
        return true
    }

    /// A number by the JSON grammar (its value is not needed; one too large for a Double, which
    /// the parser refuses, goes to the parser too).
    private mutating func number() -> Bool {
        let start = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { return false }
        if bytes[index] == UInt8(ascii: "0") { index += 1 } else { while index < bytes.count, isDigit(bytes[index]) { index += 1 } }
        var plain = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { return false }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            plain = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { return false }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        // A long mantissa or an exponent may be out of a Double's range: the parser decides.
        if plain && index - start <= 300 { return true }
        return (try? JSONParser.parse(Array(bytes[start..<index]))) != nil
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// The index just past the string that opens at `start` (escapes skipped, not checked).
    private static func stringEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""): return index + 1
            case UInt8(ascii: "\\"): index += 2
            case 0..<0x20: return nil
            default: index += 1
            }
        }
        return nil
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether `word`'s bytes stand at `index` (the scanners' `true`, `false`, `null`, and the
    /// stored-form scanner's fixed pieces).
    public func starts(with word: StaticString, at index: Int) -> Bool {
        let count = word.utf8CodeUnitCount
        guard self.count - index >= count else { return false }
        for offset in 0..<count where self[index + offset] != word.utf8Start[offset] { return false }
        return true
    }
}
