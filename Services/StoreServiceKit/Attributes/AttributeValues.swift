import FoundationEssentials
import MeowWire

/// The `values` object of insert/set requests: property name → JSON value, converted to storage
/// form against the model later (AttributeCoding), where the entity is known.
struct AttributeValues: Codable, Sendable {
    var values: [String: JSONValue]

    init(from decoder: any Decoder) throws {
        // From a parsed tree (every request) this is a lookup; other decoders get JSONValue's probing.
        guard case let .object(values) = try JSONValue(from: decoder) else {
            throw DecodingError.typeMismatch([String: JSONValue].self, .init(codingPath: decoder.codingPath, debugDescription: "values must be an object."))
        }
        self.values = values
    }

    func encode(to encoder: any Encoder) throws {
        try values.encode(to: encoder)
    }
}
