/// Decodes `Decodable` types from a parsed `JSONValue` tree (see `JSONParser`).
///
/// Errors are the standard `DecodingError`s with the coding path of the offending field, as
/// Foundation's `JSONDecoder` reports them, so callers map them the same way. Numbers convert
/// where no information is lost: an integer decodes as a `Double`, a whole `Double` within range
/// as an integer. A `JSONValue` anywhere in the target type is taken from the tree as is (no
/// type probing), which is what makes open-ended payloads cheap.
///
/// ```swift
/// let request = try JSONValueDecoder().decode(Request.self, from: JSONParser.parse(bytes))
/// ```
public struct JSONValueDecoder: Sendable {
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try JSONValueDecoding(value, parent: nil, key: nil, userInfo: userInfo).unbox(T.self)
    }

    /// Parses and decodes in one call; a parse failure is a `DecodingError.dataCorrupted`.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON: \(error)", underlyingError: error))
        }
        return try decode(type, from: value)
    }
}

/// The `Decoder` over one node of the tree. It knows its parent and key, not its whole path:
/// the path is built only when an error needs it (building it for every nested value was a
/// large share of decoding a 1,000-object request).
final class JSONValueDecoding: Decoder {
    let value: JSONValue
    private let parent: JSONValueDecoding?
    private let key: (any CodingKey)?
    let sendableUserInfo: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    init(_ value: JSONValue, parent: JSONValueDecoding?, key: (any CodingKey)?, userInfo: [CodingUserInfoKey: any Sendable]) {
        self.value = value
        self.parent = parent
        self.key = key
        self.sendableUserInfo = userInfo
    }

    var codingPath: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node: JSONValueDecoding? = self
        while let current = node, let key = current.key {
            keys.append(key)
            node = current.parent
        }
        return keys.reversed()
    }

    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSONValue.self { return value as! T }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case let .object(members) = value else {
            throw JSONValueDecoding.mismatch([String: JSONValue].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case let .array(elements) = value else {
            throw JSONValueDecoding.mismatch([JSONValue].self, value, codingPath)
        }
        return UnkeyedContainer(elements: elements, decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(decoder: self) }

    func child(_ value: JSONValue, key: any CodingKey) -> JSONValueDecoding {
        JSONValueDecoding(value, parent: self, key: key, userInfo: sendableUserInfo)
    }

    // MARK: Scalars

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError {
        let path = path()
        if value == .null {
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "Expected \(type) value but found null instead."))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(describe(value)) instead."))
    }

    static func string(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        if case let .string(text) = value { return text }
        throw mismatch(String.self, value, path())
    }

    static func bool(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        if case let .bool(flag) = value { return flag }
        throw mismatch(Bool.self, value, path())
    }

    static func double(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case let .double(number): return number
        case let .int(number): return Double(number)
        default: throw mismatch(Double.self, value, path())
        }
    }

    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> T {
        switch value {
        case let .int(number):
            guard let exact = T(exactly: number) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Number \(number) does not fit in \(T.self)."))
            }
            return exact
        case let .double(number):
            guard let exact = T(exactly: number) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Number \(number) is not representable as \(T.self)."))
            }
            return exact
        default: throw mismatch(T.self, value, path())
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let decoder: JSONValueDecoding
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return value
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try JSONValueDecoding.bool(member(key), path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try JSONValueDecoding.string(member(key), path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try JSONValueDecoding.double(member(key), path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try JSONValueDecoding.double(member(key), path(key))) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try JSONValueDecoding.integer(type, member(key), path(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try JSONValueDecoding.integer(type, member(key), path(key)) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = try member(key)
        if T.self == JSONValue.self { return value as! T }
        return try decoder.child(value, key: key).unbox(T.self)
    }

    // Optional fields: absent or null is nil, without a thrown error.
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let value = members[key.stringValue], value != .null else { return nil }
        return try JSONValueDecoding.string(value, path(key))
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let value = members[key.stringValue], value != .null else { return nil }
        return try JSONValueDecoding.bool(value, path(key))
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let value = members[key.stringValue], value != .null else { return nil }
        return try JSONValueDecoding.integer(type, value, path(key))
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let value = members[key.stringValue], value != .null else { return nil }
        return try JSONValueDecoding.double(value, path(key))
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = members[key.stringValue] else { return nil }
        if T.self == JSONValue.self { return (value as! T) }
        if value == .null { return nil }
        return try decoder.child(value, key: key).unbox(T.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder.child(try member(key), key: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder.child(try member(key), key: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        decoder.child(members["super"] ?? .null, key: JSONKey(stringValue: "super"))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        decoder.child(members[key.stringValue] ?? .null, key: key)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let decoder: JSONValueDecoding
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }
    private(set) var currentIndex = 0

    init(elements: [JSONValue], decoder: JSONValueDecoding) {
        self.elements = elements
        self.decoder = decoder
    }

    private var key: JSONKey { JSONKey(index: currentIndex) }

    private mutating func next<T>(_ type: T.Type) throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: codingPath + [key], debugDescription: "Unkeyed container is at end."))
        }
        if elements[currentIndex] == .null { currentIndex += 1; return true }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { let key = self.key; return try JSONValueDecoding.bool(next(type), codingPath + [key]) }
    mutating func decode(_ type: String.Type) throws -> String { let key = self.key; return try JSONValueDecoding.string(next(type), codingPath + [key]) }
    mutating func decode(_ type: Double.Type) throws -> Double { let key = self.key; return try JSONValueDecoding.double(next(type), codingPath + [key]) }
    mutating func decode(_ type: Float.Type) throws -> Float { let key = self.key; return Float(try JSONValueDecoding.double(next(type), codingPath + [key])) }
    mutating func decode(_ type: Int.Type) throws -> Int { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let key = self.key; return try JSONValueDecoding.integer(type, next(type), codingPath + [key]) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let key = self.key
        let value = try next(type)
        if T.self == JSONValue.self { return value as! T }
        return try decoder.child(value, key: key).unbox(T.self)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let key = self.key
        return try decoder.child(try next(JSONValue.self), key: key).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let key = self.key
        return try decoder.child(try next(JSONValue.self), key: key).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let key = self.key
        return decoder.child(try next(JSONValue.self), key: key)
    }
}

private struct SingleValue: SingleValueDecodingContainer {
    let decoder: JSONValueDecoding
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var value: JSONValue { decoder.value }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try JSONValueDecoding.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try JSONValueDecoding.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try JSONValueDecoding.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try JSONValueDecoding.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try JSONValueDecoding.integer(type, value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(T.self) }
}

/// Keys for coding paths: array indexes and `super`.
struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { self.init(index: intValue) }
    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }
}
