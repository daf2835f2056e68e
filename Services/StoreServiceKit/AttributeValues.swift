import FoundationEssentials
import MeowWire

/// The `values` object of insert/set requests. Decoded in the order values usually come
/// (string, integer, number, boolean), because every wrong guess costs a thrown DecodingError:
/// this keeps a 1,000-object insert's decoding several times cheaper than JSONValue's order.
struct AttributeValues: Codable, Sendable {
    var values: [String: JSONValue]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var values: [String: JSONValue] = [:]
        values.reserveCapacity(container.allKeys.count)
        for key in container.allKeys {
            values[key.stringValue] = try Self.decodeValue(container, key)
        }
        self.values = values
    }

    private static func decodeValue(_ container: KeyedDecodingContainer<Key>, _ key: Key) throws -> JSONValue {
        if try container.decodeNil(forKey: key) { return .null }
        if let text = try? container.decode(String.self, forKey: key) { return .string(text) }
        if let number = try? container.decode(Int.self, forKey: key) { return .int(number) }
        if let number = try? container.decode(Double.self, forKey: key) { return .double(number) }
        if let flag = try? container.decode(Bool.self, forKey: key) { return .bool(flag) }
        return try container.decode(JSONValue.self, forKey: key)
    }

    func encode(to encoder: any Encoder) throws {
        try values.encode(to: encoder)
    }
}
