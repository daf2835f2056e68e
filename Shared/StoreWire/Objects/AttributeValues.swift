import MeowWire

/// The `values` object of insert/set requests: property name → JSON value, converted to storage
/// form against the model by the service, where the entity is known.
///
/// Kept as the members in the order they were sent, each key once (a repeated key keeps its
/// first place and its last value, as a JSON object's last member stands): a bulk insert reads
/// thousands of these, and building, hashing and freeing a dictionary for each was a large share
/// of reading the request. `values` is the dictionary view. Two values are equal when their
/// dictionaries are: the order is not part of the value.
public struct AttributeValues: Codable, Sendable, Hashable {
    public typealias Member = (key: String, value: JSONValue)

    public private(set) var members: [Member]

    public var values: [String: JSONValue] {
        get { Dictionary(members, uniquingKeysWith: { $1 }) }
        set { members = newValue.map { ($0.key, $0.value) } }
    }

    public init(_ values: [String: JSONValue]) { members = values.map { ($0.key, $0.value) } }

    /// `members` in the order read; a repeated key's later value replaces the earlier one.
    init(reading members: [Member]) { self.members = members }

    public init(from decoder: any Decoder) throws {
        // From a parsed tree (every request) this is a lookup; other decoders get JSONValue's probing.
        guard case let .object(values) = try JSONValue(from: decoder) else {
            throw DecodingError.typeMismatch([String: JSONValue].self, .init(codingPath: decoder.codingPath, debugDescription: "values must be an object."))
        }
        self.init(values)
    }

    public func encode(to encoder: any Encoder) throws {
        try values.encode(to: encoder)
    }

    public static func == (lhs: AttributeValues, rhs: AttributeValues) -> Bool { lhs.values == rhs.values }

    public func hash(into hasher: inout Hasher) { hasher.combine(values) }
}
