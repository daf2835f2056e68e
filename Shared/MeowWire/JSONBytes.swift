/// JSON text built as UTF-8 bytes, in `JSONWriter`'s forms (its escaping, its numbers): a writer
/// of many small pieces (a page of rows, a batch of records) appends each to one array, where a
/// `String` append costs a hundred or more instructions of bookkeeping a piece.
public struct JSONBytes: Sendable {
    public var bytes: [UInt8] = []

    public init() {}

    /// Room for `capacity` bytes.
    public init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Starting from `bytes` (JSON text already written).
    public init(bytes: [UInt8]) { self.bytes = bytes }

    public mutating func append(_ literal: StaticString) {
        // Most literals are one byte (a comma, a bracket): appended as that byte.
        if literal.utf8CodeUnitCount == 1 { return bytes.append(literal.utf8Start.pointee) }
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Text known to need no escaping (store UUIDs, entity names).
    public mutating func append(raw text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Decimal digits written in place (a String per number was a tenth of writing a row).
    public mutating func append(integer: Int64) {
        if integer < 0 { bytes.append(0x2D) }
        var magnitude = integer.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = 0x30 + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start...]))
        }
    }

    /// `JSONWriter.appendNumber`'s form: a whole number below 1e15 is written as its integer
    /// (what dropping Swift's ".0" gives; -0 keeps the slow path's "-0").
    public mutating func append(number: Double) {
        if number.rounded() == number, abs(number) < 1e15, !(number == 0 && number.sign == .minus) {
            append(integer: Int64(number))
            return
        }
        var text = ""
        JSONWriter.appendNumber(number, to: &text)
        append(raw: text)
    }

    /// A string literal of text as SQLite holds it: copied as is when it is plain ASCII with
    /// nothing JSON escapes; otherwise read as a String first (invalid UTF-8 repaired, as
    /// reading the column as a String does) and written as `append(string:)` writes it.
    public mutating func append(utf8: UnsafeBufferPointer<UInt8>) {
        if !utf8.contains(where: { $0 >= 0x80 || $0 == 0x22 || $0 == 0x5C || $0 < 0x20 }) {
            bytes.append(0x22)
            bytes.append(contentsOf: utf8)
            bytes.append(0x22)
            return
        }
        append(string: String(decoding: utf8, as: UTF8.self))
    }

    /// A string literal, as `JSONWriter` escapes it.
    public mutating func append(string: String) { JSONWriter.appendString(string, to: &bytes) }

    /// The text written so far, appended to `out` at once.
    public func append(to out: inout String) { out += String(decoding: bytes, as: UTF8.self) }
}

