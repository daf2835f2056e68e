/// Writes JSON text directly into a `String`, for hot paths where building `Encodable` values and
/// running `JSONEncoder` costs more than the data is worth (packed history rows, record payloads).
/// Output is compact, object keys are sorted (deterministic text), and numbers use Swift's
/// shortest round-tripping form; non-finite doubles, which JSON cannot hold, are written as null.
public enum JSONWriter {
    /// `value` as JSON text.
    public static func text(_ value: JSONValue) -> String {
        var out = ""
        append(value, to: &out)
        return out
    }

    public static func append(_ value: JSONValue, to out: inout String) {
        switch value {
        case .null: out += "null"
        case let .bool(flag): out += flag ? "true" : "false"
        case let .int(number): out += String(number)
        case let .double(number): out += number.isFinite ? "\(number)" : "null"
        case let .string(text): appendString(text, to: &out)
        case let .array(elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                append(element, to: &out)
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                append(members[key]!, to: &out)
            }
            out += "}"
        }
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    public static func appendString(_ text: String, to out: inout String) {
        // Fast path: most strings (names, IDs, dates) need no escaping.
        if !text.utf8.contains(where: { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 }) {
            out += "\""
            out += text
            out += "\""
            return
        }
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
