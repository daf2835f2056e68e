#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A forward reader over JSON too large to hold at once (a snapshot file): it keeps one chunk of
/// the input, refilled from a positional source as the walk moves on, so its memory is the chunk
/// plus the largest single value read whole (a row), whatever the input's size.
///
/// The containers a caller walks are read member by member, as `JSONScanner` walks them; a value
/// read whole (`value()`) is parsed by `JSONParser`, with its rules and its errors (offsets are
/// the input's). A skipped value is checked for structure only (strings closed, brackets
/// balanced). Every method throws a `JSONParser.Failure` at anything malformed, and passes on
/// whatever the source throws.
///
/// The source reads at an offset, so a caller can come back to a member it skipped
/// (`position`, `seek(to:)`): a document whose members come in another order than the caller
/// needs is read in two passes over the input rather than held in memory.
///
/// ```swift
/// var stream = JSONStream(source: readAt)
/// try stream.beginObject()
/// while let key = try stream.nextKey() {
///     if key == "rows" {
///         try stream.beginArray()
///         while try stream.nextElement() { insert(try stream.value()) }
///     } else {
///         try stream.skipValue()
///     }
/// }
/// guard try stream.atEnd else { … }
/// ```
// Its own byte loop, not JSONScanner's: the scanner needs the whole value in one buffer, and this input arrives in chunks.
public struct JSONStream {
    public typealias Failure = JSONParser.Failure
    /// Reads up to `buffer.count` bytes of the input at `offset` into `buffer`; 0 at its end.
    public typealias Source = (_ offset: Int, _ buffer: UnsafeMutableRawBufferPointer) throws -> Int

    private let source: Source
    /// Input bytes from offset `base`; `count` of them are read, `index` is the next to walk.
    private var buffer: [UInt8]
    private var base = 0
    private var count = 0
    private var index = 0
    private var ended = false
    /// Whether the container just begun has had no member yet (one flag serves every level,
    /// as in `JSONScanner`: a nested container ends before its parent's next member).
    private var first = true

    /// `chunkSize`: how much is read at a time, and the buffer's size unless one value is larger.
    public init(chunkSize: Int = 1 << 20, source: @escaping Source) {
        self.source = source
        buffer = [UInt8](repeating: 0, count: max(chunkSize, 1))
    }

    /// The input offset of the next byte to walk.
    public var position: Int { base + index }

    /// Continues the walk at `offset` (one `position` answered), as inside a container that has
    /// had a member: read the value there, or the member after.
    public mutating func seek(to offset: Int) {
        base = offset
        count = 0
        index = 0
        ended = false
        first = false
    }

    /// Whether only whitespace is left.
    public var atEnd: Bool {
        mutating get throws { try peek() == nil }
    }

    // MARK: Containers

    /// Consumes `{`; walk the members with `nextKey`.
    public mutating func beginObject() throws {
        guard try peek() == UInt8(ascii: "{") else { throw failure("expected an object") }
        index += 1
        first = true
    }

    /// The next member's key, its `:` consumed (read or skip its value next); nil after the
    /// object's `}`.
    public mutating func nextKey() throws -> String? {
        guard try step(closing: UInt8(ascii: "}"), in: "an object") else { return nil }
        guard try peek() == UInt8(ascii: "\""), case let .string(key) = try value() else { throw failure("expected a string key") }
        guard try peek() == UInt8(ascii: ":") else { throw failure("expected ':' after a key") }
        index += 1
        return key
    }

    /// Consumes `[`; walk the elements with `nextElement`.
    public mutating func beginArray() throws {
        guard try peek() == UInt8(ascii: "[") else { throw failure("expected an array") }
        index += 1
        first = true
    }

    /// Whether another element follows (read or skip it next); false after the array's `]`.
    public mutating func nextElement() throws -> Bool {
        try step(closing: UInt8(ascii: "]"), in: "an array")
    }

    private mutating func step(closing: UInt8, in container: String) throws -> Bool {
        guard let next = try peek() else { throw failure("unexpected end of input in \(container)") }
        if next == closing {
            index += 1
            first = false
            return false
        }
        if !first {
            guard next == UInt8(ascii: ",") else { throw failure("expected ',' or '\(Character(Unicode.Scalar(closing)))' in \(container)") }
            index += 1
        }
        first = false
        return true
    }

    // MARK: Values

    /// The next value, read whole and parsed by `JSONParser`.
    public mutating func value() throws -> JSONValue {
        let length = try extent(keeping: true)
        let start = index
        let parsed: JSONValue
        do throws(Failure) {
            parsed = try buffer.withUnsafeBufferPointer { (bytes) throws(Failure) -> JSONValue in
                try JSONParser.parse(UnsafeBufferPointer(rebasing: bytes[start..<(start + length)]))
            }
        } catch {
            throw Failure(offset: base + start + error.offset, reason: error.reason)
        }
        index += length
        return parsed
    }

    /// Skips the next value without holding it (a member the caller does not need, or comes
    /// back to later): its structure is checked, its contents are not.
    public mutating func skipValue() throws {
        index += try extent(keeping: false)
    }

    /// The next value's length from `index` (whitespace before it skipped), found by structure:
    /// brackets, strings, and where a number or literal stops. `keeping`: every byte of it stays
    /// in the buffer; otherwise what is passed is dropped as the walk goes (`index` moves on).
    private mutating func extent(keeping: Bool) throws -> Int {
        guard try peek() != nil else { throw failure("unexpected end of input") }
        var closers: [UInt8] = []
        var offset = 0
        repeat {
            if !keeping {
                index += offset
                offset = 0
            }
            guard let byte = try byte(at: offset) else { throw failure("unexpected end of input", at: offset) }
            switch byte {
            case UInt8(ascii: "\""):
                offset = try stringEnd(from: offset, keeping: keeping)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard closers.count < JSONParser.maxDepth else { throw failure("nesting deeper than \(JSONParser.maxDepth) levels", at: offset) }
                closers.append(byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]"))
                offset += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard closers.last == byte else { throw failure("unexpected '\(Character(Unicode.Scalar(byte)))'", at: offset) }
                closers.removeLast()
                offset += 1
            case 0x20, 0x0A, 0x0D, 0x09, UInt8(ascii: ","), UInt8(ascii: ":"):
                guard !closers.isEmpty else { throw failure("unexpected character", at: offset) }
                offset += 1
            default:
                let end = try scalarEnd(from: offset)
                guard end > offset else { throw failure("unexpected character", at: offset) }
                offset = end
            }
        } while !closers.isEmpty
        return offset
    }

    /// Past the closing quote of the string opening at `offset` (escapes skipped, not checked).
    private mutating func stringEnd(from offset: Int, keeping: Bool) throws -> Int {
        var offset = offset + 1
        while true {
            if let found = buffer.withUnsafeBufferPointer({ Self.quoteOrBackslash(in: $0, from: index + offset, to: count) }) {
                if buffer[found] == UInt8(ascii: "\"") { return found - index + 1 }
                offset = found - index + 2
                continue
            }
            offset = max(offset, count - index)
            if !keeping {
                index += offset
                offset = 0
            }
            guard try fill(offset + 1) else { throw failure("unterminated string", at: offset) }
        }
    }

    /// The first `"` or `\` in `bytes[from..<to]`, found with `memchr` (a string can be long).
    private static func quoteOrBackslash(in bytes: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int? {
        guard from < to, let start = bytes.baseAddress else { return nil }
        let origin = UnsafeRawPointer(start)
        let quote = memchr(origin + from, Int32(UInt8(ascii: "\"")), to - from).map { UnsafeRawPointer($0) - origin }
        let end = quote ?? to
        let backslash = from < end ? memchr(origin + from, Int32(UInt8(ascii: "\\")), end - from).map { UnsafeRawPointer($0) - origin } : nil
        return backslash ?? quote
    }

    /// Past a number or literal starting at `offset`: its characters run to a delimiter or the
    /// input's end (which of them are right is `JSONParser`'s to say).
    private mutating func scalarEnd(from offset: Int) throws -> Int {
        var offset = offset
        while let byte = try byte(at: offset) {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
                offset += 1
            default:
                return offset
            }
        }
        return offset
    }

    // MARK: The buffer

    /// The next byte after whitespace, not consumed; nil at the input's end.
    private mutating func peek() throws -> UInt8? {
        while true {
            while index < count {
                switch buffer[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return buffer[index]
                }
            }
            guard try fill(1) else { return nil }
        }
    }

    /// The byte `offset` past `index`, read in if need be; nil past the input's end.
    private mutating func byte(at offset: Int) throws -> UInt8? {
        if index + offset >= count, !(try fill(offset + 1)) { return nil }
        return buffer[index + offset]
    }

    /// Makes `needed` bytes from `index` readable; false when the input ends first. What is
    /// before `index` is dropped; the buffer grows only for a value longer than it.
    private mutating func fill(_ needed: Int) throws -> Bool {
        while count - index < needed {
            if ended { return false }
            if index > 0 {
                let kept = count - index
                buffer.withUnsafeMutableBytes { bytes in
                    if kept > 0 { bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + index, byteCount: kept) }
                }
                base += index
                count = kept
                index = 0
            }
            if count == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
            let read = try buffer.withUnsafeMutableBytes { bytes in
                try source(base + count, UnsafeMutableRawBufferPointer(rebasing: bytes[count...]))
            }
            if read <= 0 { ended = true } else { count += read }
        }
        return true
    }

    /// A failure at the walk's position (a caller's own reason: a member of the wrong type).
    public func failure(_ reason: String) -> Failure { failure(reason, at: 0) }

    private func failure(_ reason: String, at offset: Int) -> Failure {
        Failure(offset: base + index + offset, reason: reason)
    }
}
