/// A frame's text for the trace: `JSONWriter.text` of the value (with credentials redacted as
/// `CredentialRedaction.redacted` does), cut to `FrameTrace.maxEntryCharacters` characters and
/// "…". Written straight from the value and stopped soon after the cut, so a large reply costs
/// the trace what its first few thousand characters cost, and no redacted copy of it is made.
enum TraceText {
    static func text(_ value: JSONValue, redacting: Bool, limit: Int = FrameTrace.maxEntryCharacters) -> String {
        var out = ""
        // A character is at least one byte: past this many bytes the cut is usually certain.
        let budget = limit * 4 + 64
        let complete = write(value, redacting: redacting, to: &out, budget: budget)
        if out.utf8.count <= limit { return out }
        if out.count > limit { return String(out.prefix(limit)) + "…" }
        guard !complete else { return out }
        // Many bytes in few characters: the whole text decides.
        out = ""
        _ = write(value, redacting: redacting, to: &out, budget: .max)
        return out.count > limit ? String(out.prefix(limit)) + "…" : out
    }

    /// Appends `value`'s text; false once `out` passed `budget` bytes (the text is then cut short).
    private static func write(_ value: JSONValue, redacting: Bool, to out: inout String, budget: Int) -> Bool {
        switch value {
        case let .array(elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                guard write(element, redacting: redacting, to: &out, budget: budget) else { return false }
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                JSONWriter.appendString(key, to: &out)
                out += ":"
                var member = members[key]!
                if redacting {
                    if key == "credential", member != .null {
                        member = CredentialRedaction.placeholder
                    } else if key == "tables", case var .object(tables) = member, case let .array(rows)? = tables["users"] {
                        tables["users"] = .array(rows.map(redactedUserRow))
                        member = .object(tables)
                    }
                }
                guard write(member, redacting: redacting, to: &out, budget: budget) else { return false }
            }
            out += "}"
        default:
            JSONWriter.append(value, to: &out)
        }
        return out.utf8.count <= budget
    }

    /// As `CredentialRedaction` hides a snapshot's users row: name, credential, status, created.
    private static func redactedUserRow(_ row: JSONValue) -> JSONValue {
        guard case var .array(values) = row, values.count > 1, values[1] != .null else { return row }
        values[1] = CredentialRedaction.placeholder
        return .array(values)
    }
}
