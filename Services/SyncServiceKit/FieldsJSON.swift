import MeowWire

/// Writes record fields as compact JSON text with sorted keys. Records are the hot path of
/// records.modify and JSONEncoder costs several times more than this direct writer.
enum FieldsJSON {
    static func text(_ fields: [String: JSONValue]) -> String {
        var out = ""
        out.reserveCapacity(64 * max(1, fields.count))
        write(.object(fields), into: &out)
        return out
    }

    static func write(_ value: JSONValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case let .bool(flag): out += flag ? "true" : "false"
        case let .int(number): out += String(number)
        case let .double(number):
            // Swift prints the shortest text that reads back as the same Double; JSON has no
            // NaN or infinity, and the decoder never produces them.
            out += number.isFinite ? "\(number)" : "null"
        case let .string(text): quote(text, into: &out)
        case let .array(items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        case let .object(object):
            out += "{"
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                quote(key, into: &out)
                out += ":"
                write(object[key] ?? .null, into: &out)
            }
            out += "}"
        }
    }

    static func quote(_ text: String, into out: inout String) {
        out += "\""
        var plain = true
        for byte in text.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
            plain = false
            break
        }
        if plain {
            out += text
        } else {
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                default:
                    if scalar.value < 0x20 {
                        let hex = String(scalar.value, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
        }
        out += "\""
    }
}
