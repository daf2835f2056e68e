import MeowWire

/// The `values` object of insert/set requests: property name → JSON value, converted to storage
/// form against the model by the service, where the entity is known.
public struct AttributeValues: Codable, Sendable, Hashable {
    public var values: [String: JSONValue]

    public init(_ values: [String: JSONValue]) { self.values = values }

    public init(from decoder: any Decoder) throws {
        // From a parsed tree (every request) this is a lookup; other decoders get JSONValue's probing.
        guard case let .object(values) = try JSONValue(from: decoder) else {
            throw DecodingError.typeMismatch([String: JSONValue].self, .init(codingPath: decoder.codingPath, debugDescription: "values must be an object."))
        }
        self.values = values
    }

    public func encode(to encoder: any Encoder) throws {
        try values.encode(to: encoder)
    }
}
