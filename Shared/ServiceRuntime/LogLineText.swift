import MeowWire

/// A log line's JSON object written straight from its tree: the text
/// `JSONTextEncoder(options: .sortedKeys)` writes for the same `[String: JSONValue]` (keys sorted
/// at every level, whole doubles without a fraction, "/" not escaped), without going through
/// `Encodable`. A service's first lines paid the generic encoder's first uses (its containers'
/// metadata and conformance checks), about 0.1 ms a line at start-up, where `--help` logs nothing.
enum LogLineText {
    /// nil when a double is not finite: the encoder refuses such a line, and so does this.
    static func text(_ entry: [String: JSONValue]) -> String? {
        var out = ""
        out.reserveCapacity(160)
        return append(.object(entry), to: &out) ? out : nil
    }

    private static func append(_ value: JSONValue, to out: inout String) -> Bool {
        switch value {
        case .null: out += "null"
        case let .bool(flag): out += flag ? "true" : "false"
        case let .int(number): out += String(number)
        case let .double(number):
            guard number.isFinite else { return false }
            JSONWriter.appendNumber(number, to: &out)
        case let .string(text): JSONWriter.appendString(text, to: &out)
        case let .array(elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                guard append(element, to: &out) else { return false }
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                JSONWriter.appendString(key, to: &out)
                out += ":"
                guard append(members[key]!, to: &out) else { return false }
            }
            out += "}"
        }
        return true
    }
}
