import Foundation
import MeowWire
import StoreWire

/// What a store-service writes for a result: its `Encodable` form as the service's connection
/// encodes it, parsed back into the tree a client reads.
func written<T: Encodable>(_ value: T) throws -> JSONValue {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    return try JSONParser.parse(Array(try encoder.encode(value)))
}

/// A result written as the service writes it and read back with the clients' reader.
func roundTrip<T: Codable>(_ value: T, op: String) throws -> T {
    try StoreReply.read(T.self, from: try written(value), op: op)
}
