/// The package's one reader of JSON bytes: a forward-only scanner. `JSONParser` builds trees on
/// it, and the few hot replies and requests whose shape is known are read with it directly: a
/// decoder walks the members it expects and keeps what it reads, with no `JSONValue` tree in
/// between (a fetched page of 1,000 records would otherwise be 3,000 dictionaries built only to
/// be read once).
///
/// Two faces over one grammar. The tokens (`readString`, `readNumber`, `readLiteral`,
/// `readKey`, `readElement`) throw the parser's `Failure`, naming the problem and its offset.
/// The walking methods (`object`, `string`, `skipValue`, …) answer nil or false at anything
/// they do not expect, and never read outside the buffer; `MessageReader` turns such an answer
/// into an error naming where it stood. Both take exactly what the parser takes.
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
    public internal(set) var index = 0
    /// Whether the object being walked ended cleanly (`nextKey` answered nil at its `}`); a nil
    /// from `nextKey` with this false is malformed input.
    public private(set) var finishedObject = false
    /// Whether the array being walked ended cleanly.
    public private(set) var finishedArray = false
    /// Whether the container just begun has had no member or element yet. A nested container
    /// is walked to its end before its parent's next member, so one flag serves every level:
    /// when a nested one ends, the parent has had at least that member.
    private var first = true
    /// Where the last key read opens (its quote): a reader keeps this on its path, not the key.
    public private(set) var keyStart = 0
    /// Scratch for strings with escapes, reused so a big message allocates it once.
    private var scratch: [UInt8] = []

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

    /// The parser's error for the input at `offset` (here, unless given).
    func failure(_ reason: String, at offset: Int? = nil) -> JSONParser.Failure {
        JSONParser.Failure(offset: offset ?? index, reason: reason)
    }

    // MARK: Objects and arrays

    /// Consumes `{`; walk the members with `nextKey`.
    public mutating func beginObject() -> Bool {
        finishedObject = false
        guard peek() == UInt8(ascii: "{") else { return false }
        index += 1
        first = true
        return true
    }

    /// The next member's key, its `:` consumed (read its value next); nil at the object's end
    /// (`finishedObject` says whether it ended cleanly) or at anything else.
    public mutating func nextKey() -> String? {
        finishedObject = false
        let isFirst = first
        first = false
        do {
            guard let key = try readKey(first: isFirst) else {
                finishedObject = true
                return nil
            }
            return key
        } catch {
            return nil
        }
    }

    /// Consumes `[`; walk the elements with `nextElement`.
    public mutating func beginArray() -> Bool {
        guard peek() == UInt8(ascii: "[") else { return false }
        index += 1
        first = true
        return true
    }

    /// Continues an array begun by another scanner of the same bytes at `index`, where an
    /// element other than its first starts: the elements after it follow `nextElement`.
    mutating func resumeArray(at index: Int) {
        self.index = index
        first = false
    }

    /// Whether another element follows (its `,` consumed); false at the array's end (its `]`
    /// consumed: `finishedArray` true) or at anything else.
    public mutating func nextElement() -> Bool {
        finishedArray = false
        let isFirst = first
        first = false
        do {
            let follows = try readElement(first: isFirst)
            finishedArray = !follows
            return follows
        } catch {
            return false
        }
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

    /// Inside an object, after its `{` (`first`) or after a member's value: the next member's
    /// key with its `:` consumed, or nil at the object's `}` (consumed).
    mutating func readKey(first: Bool) throws(JSONParser.Failure) -> String? {
        skipWhitespace()
        if first {
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return nil }
        } else {
            guard index < bytes.count else { throw failure("unexpected end of input in an object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1; skipWhitespace()
            case UInt8(ascii: "}"): index += 1; return nil
            default: throw failure("expected ',' or '}' in an object")
            }
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a string key") }
        keyStart = index
        let key = try readString()
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':' after a key") }
        index += 1
        return key
    }

    /// Inside an array, after its `[` (`first`) or after an element: whether another element
    /// follows (its `,` consumed); false at the array's `]` (consumed).
    mutating func readElement(first: Bool) throws(JSONParser.Failure) -> Bool {
        skipWhitespace()
        if first {
            guard index < bytes.count else { throw failure("unexpected end of input") }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return false }
            return true
        }
        guard index < bytes.count else { throw failure("unexpected end of input in an array") }
        switch bytes[index] {
        case UInt8(ascii: ","): index += 1; return true
        case UInt8(ascii: "]"): index += 1; return false
        default: throw failure("expected ',' or ']' in an array")
        }
    }

    // MARK: Values

    /// A string value (escapes decoded, UTF-8 checked).
    public mutating func string() -> String? {
        guard peek() == UInt8(ascii: "\"") else { return nil }
        return try? readString()
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

    /// A number: `.int` when it is written without fraction or exponent and fits an `Int`,
    /// otherwise `.double`; nil when it is not a number or too large for a Double.
    public mutating func number() -> JSONValue? {
        skipWhitespace()
        return try? readNumber()
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
            // Plain ASCII needs no more checking; escapes and other text are read as the parser reads them.
            let plain = !bytes[(index + 1)..<(end - 1)].contains { $0 >= 0x80 || $0 == UInt8(ascii: "\\") }
            if plain {
                index = end
                return true
            }
            return (try? readString()) != nil
        case UInt8(ascii: "{"):
            return depth < JSONParser.maxDepth && object { _, scanner in scanner.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            return depth < JSONParser.maxDepth && array { scanner in scanner.skipValue(depth: depth + 1) }
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default:
            // Its value is not needed: only a number that may be out of a Double's range (an
            // exponent, or a mantissa too long to be sure) is converted to find out.
            guard let number = try? scanNumber() else { return false }
            if number.integer != nil || (!number.exponent && index - number.start <= 300) { return true }
            return Self.double(bytes, number.start..<index) != nil
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        (try? readLiteral(word)) != nil
    }

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

    // MARK: Tokens

    /// `word` (`true`, `false`, `null`) here.
    mutating func readLiteral(_ word: StaticString) throws(JSONParser.Failure) {
        guard bytes.count - index >= word.utf8CodeUnitCount else { throw failure("unexpected end of input") }
        guard bytes.starts(with: word, at: index) else { throw failure("invalid literal") }
        index += word.utf8CodeUnitCount
    }

    /// The string whose opening quote is here; leaves the index after its closing one.
    mutating func readString() throws(JSONParser.Failure) -> String {
        index += 1
        let start = index
        var ascii = true
        // Fast path: no escapes. Most strings in messages are plain ASCII: skipped eight bytes at
        // a time while none is a quote, a backslash, a control byte or non-ASCII (long values such
        // as base64 data are most of a request's bytes); the bytes after are read one by one.
        index += Self.plainASCIIPrefix(bytes, from: index)
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return try Self.makeString(slice, ascii: ascii, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("unescaped control character in a string") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        guard index < bytes.count else { throw failure("unterminated string", at: start - 1) }
        // Slow path: copy with escapes decoded.
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try scratch.withUnsafeBufferPointer { (buffer) throws(JSONParser.Failure) -> String in
                    try Self.makeString(buffer, ascii: ascii, at: start)
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
        throw failure("unterminated string", at: start - 1)
    }

    /// How many bytes from `start`, in whole words of eight, hold nothing a string's fast path
    /// stops at (`"`, `\\`, a byte below 0x20 or from 0x80).
    @inline(__always)
    static func plainASCIIPrefix(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        // Exact tests of "some byte is zero" and "some byte is below n" (n ≤ 128) over a word.
        func hasZero(_ word: UInt64) -> Bool { (word &- ones) & ~word & highs != 0 }
        var at = start
        while at + 8 <= bytes.count {
            let word = UnsafeRawPointer(base + at).loadUnaligned(as: UInt64.self)
            let special = word & highs != 0 || (word &- ones &* 0x20) & ~word & highs != 0
                || hasZero(word ^ (ones &* 0x22)) || hasZero(word ^ (ones &* 0x5C))
            if special { break }
            at += 8
        }
        return at - start
    }

    private static func makeString(_ slice: UnsafeBufferPointer<UInt8>, ascii: Bool, at start: Int) throws(JSONParser.Failure) -> String {
        if ascii { return String(decoding: slice, as: UTF8.self) }
        guard let text = String(validating: slice, as: UTF8.self) else { throw JSONParser.Failure(offset: start, reason: "invalid UTF-8 in a string") }
        return text
    }

    private mutating func hex4() throws(JSONParser.Failure) -> UInt32 {
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

    private mutating func appendUTF8(_ scalar: UInt32) {
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
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether `word`'s bytes stand at `index` (the scanner's `true`, `false`, `null`, and the
    /// stored-form scanner's fixed pieces).
    public func starts(with word: StaticString, at index: Int) -> Bool {
        let count = word.utf8CodeUnitCount
        guard self.count - index >= count else { return false }
        for offset in 0..<count where self[index + offset] != word.utf8Start[offset] { return false }
        return true
    }
}
