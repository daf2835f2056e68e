/// Replaces credentials in a logged frame: every member named `credential` (hello's param,
/// admin.createUser's, account.signIn's, a users file's) and the credential column of a snapshot's
/// users table. `meowctl tap` and the test libraries' failure reports use it.
public enum CredentialRedaction {
    public static let placeholder: JSONValue = "<redacted>"

    public static func redacted(_ value: JSONValue) -> JSONValue {
        switch value {
        case let .object(members):
            var copy: [String: JSONValue] = [:]
            for (key, member) in members {
                if key == "credential", member != .null {
                    copy[key] = placeholder
                } else if key == "tables", case var .object(tables) = member, case let .array(rows)? = tables["users"] {
                    tables["users"] = .array(rows.map(redactedUserRow))
                    copy[key] = redacted(.object(tables))
                } else {
                    copy[key] = redacted(member)
                }
            }
            return .object(copy)
        case let .array(items):
            return .array(items.map(redacted))
        default:
            return value
        }
    }

    /// A snapshot's users row: name, credential, status, created.
    private static func redactedUserRow(_ row: JSONValue) -> JSONValue {
        guard case var .array(values) = row, values.count > 1, values[1] != .null else { return row }
        values[1] = placeholder
        return .array(values)
    }
}
