/// A string enum a client names on the wire: decoding an unknown name fails with a message that
/// lists the valid ones, so a typo in a request is answered with what to send instead.
public protocol NamedOption: RawRepresentable<String>, CaseIterable, Decodable {
    /// What the value is, for the message ("a merge policy").
    static var optionDescription: String { get }
}

extension NamedOption {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Self(rawValue: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription:
                "'\(text)' is not \(Self.optionDescription); use one of \(Self.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        self = value
    }
}
