/// Writes JSON text directly into a `String`: `JSONValue` trees here, `Encodable` values through
/// `JSONTextEncoder`, which shares its string escaping and number form.
/// A tree's text is compact, object keys are sorted (deterministic text), and numbers use Swift's
/// shortest round-tripping form; non-finite doubles, which JSON cannot hold, are written as null.
public enum JSONWriter {
    /// `value` as JSON text.
    public static func text(_ value: JSONValue) -> String {
        var out = ""
        append(value, to: &out)
        return out
    }

    /// `strings` as a JSON array's text (`["a","b"]`), without a tree in between: property
    /// names, and a statement's `json_each(?)` argument.
    public static func text(strings: [String]) -> String {
        var out = "["
        for (index, string) in strings.enumerated() {
            if index > 0 { out += "," }
            appendString(string, to: &out)
        }
        return out + "]"
    }

    /// `integralDoubles`: whole doubles below 1e15 are written as integers (`250`, not `250.0`),
    /// for text compared with what a peer that does so sends back.
    public static func append(_ value: JSONValue, to out: inout String, integralDoubles: Bool = false) {
        switch value {
        case .null: out += "null"
        case let .bool(flag): out += flag ? "true" : "false"
        case let .int(number): out += String(number)
        case let .double(number):
            if !number.isFinite {
                out += "null"
            } else if integralDoubles, number.rounded() == number, abs(number) < 1e15 {
                out += String(Int64(number))
            } else {
                out += "\(number)"
            }
        case let .string(text): appendString(text, to: &out)
        case let .array(elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                append(element, to: &out, integralDoubles: integralDoubles)
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                append(members[key]!, to: &out, integralDoubles: integralDoubles)
            }
            out += "}"
        }
    }

    /// A double in the form JSON clients have always been sent: Swift's shortest round-tripping
    /// text with a whole number's ".0" dropped (`1`, `0.1`, `1e+20`). The caller rules out
    /// non-finite values, which JSON cannot hold.
    public static func appendNumber(_ number: Double, to out: inout String) {
        let text = number.description
        out += text.hasSuffix(".0") ? text.dropLast(2) : Substring(text)
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped (the short
    /// escapes where JSON has one); "/" as "\/" when `escapingSlashes`.
    public static func appendString(_ text: String, to out: inout String, escapingSlashes: Bool = false) {
        // Fast path: most strings (names, IDs, dates) need no escaping.
        if isPlain(text, escapingSlashes: escapingSlashes) {
            out += "\""
            out += text
            out += "\""
            return
        }
        // Escaped into bytes, then appended once: per-scalar appends were most of a record
        // batch's encoding.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 16)
        appendEscaped(text, to: &bytes, escapingSlashes: escapingSlashes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// `appendString`'s literal as UTF-8 bytes, for writers that build their text as bytes.
    public static func appendString(_ text: String, to bytes: inout [UInt8], escapingSlashes: Bool = false) {
        guard isPlain(text, escapingSlashes: escapingSlashes) else { return appendEscaped(text, to: &bytes, escapingSlashes: escapingSlashes) }
        bytes.append(0x22)
        bytes.append(contentsOf: text.utf8)
        bytes.append(0x22)
    }

    private static func appendEscaped(_ text: String, to bytes: inout [UInt8], escapingSlashes: Bool) {
        bytes.append(0x22)
        // Escape byte by byte (UTF-8 multi-byte sequences never contain these bytes), never an
        // array literal per escape (each one was an allocation).
        for byte in text.utf8 {
            switch byte {
            case 0x22, 0x5C: bytes.append(0x5C); bytes.append(byte)
            case 0x2F where escapingSlashes: bytes.append(0x5C); bytes.append(byte)
            case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(0x5C); bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(0x5C); bytes.append(UInt8(ascii: "f"))
            case 0..<0x20:
                bytes.append(0x5C); bytes.append(UInt8(ascii: "u")); bytes.append(0x30); bytes.append(0x30)
                bytes.append(hexDigits[Int(byte >> 4)]); bytes.append(hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(0x22)
    }

    /// True when `text` has nothing JSON escapes (checked over the contiguous bytes where the
    /// string has them: a generic walk of the UTF-8 view cost more than the append).
    private static func isPlain(_ text: String, escapingSlashes: Bool) -> Bool {
        let slash: UInt8 = escapingSlashes ? 0x2F : 0x22
        return text.utf8.withContiguousStorageIfAvailable { bytes in !bytes.contains { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 || $0 == slash } }
            ?? !text.utf8.contains(where: { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 || $0 == slash })
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

/// A result that writes its own JSON text. The runtime sends it as is instead of encoding the
/// value (which was most of the cost of a page of records). `writeJSON` returns false to fall
/// back to `JSONTextEncoder` for shapes it does not write itself; it must then leave `out` as it
/// found it. The text must decode to what the type's `Encodable` form would: whole doubles as
/// integers, as `JSONTextEncoder` writes them.
public protocol JSONTextWritable {
    func writeJSON(to out: inout String) -> Bool
}
