/// A request's id: an integer or a string chosen by the client, echoed in the reply.
public enum RequestID: Sendable, Hashable, Codable, CustomStringConvertible {
    case int(Int)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int.self) { self = .int(value); return }
        if let value = try? container.decode(String.self) { self = .string(value); return }
        throw DecodingError.typeMismatch(RequestID.self, .init(
            codingPath: decoder.codingPath, debugDescription: "id must be an integer or a string"))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .int(value): try container.encode(value)
        case let .string(value): try container.encode(value)
        }
    }

    public var description: String {
        switch self {
        case let .int(value): return String(value)
        case let .string(value): return value
        }
    }
}
