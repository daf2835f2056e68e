import CloudWire
import MeowWire

/// Writes and reads record fields as compact JSON text (sorted keys). Records are the hot path
/// of records.modify and of change fetching, and Foundation's coders cost several times more
/// than this direct writer and reader.
enum FieldsJSON {
    /// Parses JSON text into a value; nil if the text is not valid JSON.
    static func parse(_ text: String) -> JSONValue? {
        var text = text
        return text.withUTF8 { bytes -> JSONValue? in
            var reader = Reader(bytes: bytes)
            guard let value = reader.value() else { return nil }
            reader.skipSpace()
            // Not a ternary: `cond ? value : nil` would turn nil into JSONValue.null.
            guard reader.index == bytes.count else { return nil }
            return value
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return nil }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return nil }
            index += count
            return value
        }

        mutating func value() -> JSONValue? {
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object()
            case UInt8(ascii: "["): return array()
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func object() -> JSONValue? {
            index += 1
            var object: [String: JSONValue] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(object) }
            // Room without growing (each growth rehashes; a page of records reads thousands of
            // these objects): a record's fields, the outermost object, or a field's type and value.
            object.reserveCapacity(index == 1 ? 8 : 3)
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = value() else { return nil }
                if object[key] == nil { object[key] = value }  // first wins, as Foundation's decoder
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { return nil }
                index += 1
                return .object(object)
            }
        }

        mutating func array() -> JSONValue? {
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                guard let item = value() else { return nil }
                items.append(item)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "]") else { return nil }
                index += 1
                return .array(items)
            }
        }

        mutating func string() -> String? {
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") { index += 1 }
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "\"") {
                defer { index += 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            var scalars = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self).unicodeScalars
            var pendingHigh: UInt32?
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return pendingHigh == nil ? String(scalars) : nil
                }
                if byte != UInt8(ascii: "\\") {
                    // Copy a run of plain UTF-8 up to the next quote or escape.
                    let runStart = index
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") { index += 1 }
                    scalars.append(contentsOf: String(decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<index]), as: UTF8.self).unicodeScalars)
                    continue
                }
                index += 1
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count,
                          let code = UInt32(String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<index + 4]), as: UTF8.self), radix: 16) else { return nil }
                    index += 4
                    if let high = pendingHigh {
                        guard (0xDC00...0xDFFF).contains(code), let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)) else { return nil }
                        scalars.append(scalar)
                        pendingHigh = nil
                    } else if (0xD800...0xDBFF).contains(code) {
                        pendingHigh = code
                    } else {
                        guard let scalar = Unicode.Scalar(code) else { return nil }
                        scalars.append(scalar)
                    }
                    continue
                default:
                    return nil
                }
                if pendingHigh != nil { return nil }
            }
            return nil
        }

        mutating func number() -> JSONValue? {
            let start = index
            var isInteger = true
            while index < bytes.count {
                let byte = bytes[index]
                if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") {
                    index += 1
                } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+") {
                    isInteger = false
                    index += 1
                } else {
                    break
                }
            }
            guard index > start else { return nil }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if isInteger, let number = Int(text) { return .int(number) }
            return Double(text).map(JSONValue.double)
        }
    }

    static func text(_ fields: [String: JSONValue]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64 * max(1, fields.count))
        writeObject(fields, skippingNulls: false, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The text of `fields` without its null values (what a save stores): the same as
    /// `text(withoutNulls(fields))`, without building the filtered dictionary.
    static func text(skippingNulls fields: [String: JSONValue]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64 * max(1, fields.count))
        writeObject(fields, skippingNulls: true, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `fields` without null values (the same dictionary when it has none).
    static func withoutNulls(_ fields: [String: JSONValue]) -> [String: JSONValue] {
        fields.values.contains(.null) ? fields.filter { !$0.value.isNull } : fields
    }

    /// Whether `text` is exactly what `text(skippingNulls:)` writes for the fields it parses to
    /// (after `FieldCoding.normalized`), so a save can store it as it came. Conservative: keys in
    /// byte order without escapes, no whitespace, every field `{"type":…,"value":…}` of a
    /// string, bytes, int64, double or date type with its value as the writer writes it; anything
    /// else (references, lists, other number forms, other escapes) answers false and is written
    /// out again from the parsed fields.
    static func isStoredForm(_ text: String) -> Bool { StoredFields.isStoredForm(text) }

    /// Where a fields object in stored form that starts at `start` ends (the index after its
    /// closing brace), or nil when what starts there is not one (`isStoredForm`'s rules). What
    /// it accepts is well-formed JSON: the parser keeps such fields as text without a tree.
    static func storedFormEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        StoredFields.end(bytes, from: start)
    }

    // Written as UTF-8 bytes and made a String once: appending to a String re-checks its
    // encoding on every piece, and a batch writes thousands of pieces.

    static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case let .bool(flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case let .int(number): out.append(contentsOf: number.description.utf8)
        case let .double(number):
            // Swift prints the shortest text that reads back as the same Double; JSON has no
            // NaN or infinity, and the decoder never produces them. Whole doubles are written
            // as integers, as JSONEncoder and the reply writers do: change pages send this
            // stored text as it is, and must read the same as a reply written from values.
            if number.isFinite, number.rounded() == number, abs(number) < 1e15 {
                out.append(contentsOf: String(Int64(number)).utf8)
            } else {
                out.append(contentsOf: (number.isFinite ? number.description : "null").utf8)
            }
        case let .string(text): quote(text, into: &out)
        case let .array(items):
            out.append(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(object):
            writeObject(object, skippingNulls: false, into: &out)
        }
    }

    /// Keys in sorted order. A field's `{"type": …, "value": …}` — most objects written — skips
    /// the sort ("type" < "value").
    private static func writeObject(_ object: [String: JSONValue], skippingNulls: Bool, into out: inout [UInt8]) {
        if object.count == 2, !skippingNulls, let type = object["type"], let value = object["value"] {
            out.append(contentsOf: #"{"type":"#.utf8)
            write(type, into: &out)
            out.append(contentsOf: #","value":"#.utf8)
            write(value, into: &out)
            out.append(UInt8(ascii: "}"))
            return
        }
        out.append(UInt8(ascii: "{"))
        var first = true
        for key in object.keys.sorted() {
            guard let value = object[key], !(skippingNulls && value.isNull) else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            quote(key, into: &out)
            out.append(UInt8(ascii: ":"))
            write(value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// A JSON string: quotes, backslashes and control characters escaped, byte by byte (the
    /// bytes escaped are ASCII, which never occur inside a multi-byte UTF-8 sequence).
    static func quote(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20: out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
