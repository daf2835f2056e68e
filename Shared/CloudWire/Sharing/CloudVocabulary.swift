import MeowWire

/// A closed set of CloudKit's spellings (a share permission, a participant's role, …). The set
/// is CloudKit's, so a spelling outside it is an error that names the valid ones wherever it is
/// read, never a default: a default would hand out a permission nobody granted.
public protocol CloudVocabulary: RawRepresentable<String>, CaseIterable, Codable, Sendable, Hashable {
    /// What a value is, for messages ("a share permission").
    static var vocabularyName: String { get }
}

extension CloudVocabulary {
    /// The valid spellings, in declaration order, for messages.
    public static var spellings: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// A request's value: `invalidArguments` naming `field` when it is absent or not one of
    /// `allowed` (every case unless given).
    public static func parse(_ text: String?, field: String, allowed: [Self] = Array(allCases)) throws(WireError) -> Self {
        guard let text, let value = Self(rawValue: text), allowed.contains(value) else {
            let given = text.map { ", not \(CloudKitNames.quoted($0))" } ?? ""
            throw WireError(.invalidArguments, "\(field) must be \(alternatives(allowed))\(given).",
                            details: ["field": .string(field)])
        }
        return value
    }

    /// A value a service kept in its own database: one outside the set means the row was
    /// damaged (the service only ever writes valid spellings), an `internalError` naming
    /// `place` (the table and row) rather than a guess.
    public static func stored(_ text: String?, in place: @autoclosure () -> String) throws(WireError) -> Self {
        guard let text, let value = Self(rawValue: text) else {
            let found = text.map(CloudKitNames.quoted) ?? "nothing"
            throw WireError(.internalError, "\(place()) holds \(found), which is not \(vocabularyName) (\(spellings)): the database is damaged.",
                            details: ["value": text.map { .string($0) } ?? .null])
        }
        return value
    }

    /// "a, b or c".
    private static func alternatives(_ values: [Self]) -> String {
        let names = values.map(\.rawValue)
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Self(rawValue: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription:
                "\(CloudKitNames.quoted(text)) is not \(Self.vocabularyName); use one of \(Self.spellings).")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
