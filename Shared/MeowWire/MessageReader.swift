/// Reads a message of known shape from its JSON bytes with a `JSONScanner`, keeping the path
/// of the value it is at, and throws a `MessageReadError` naming that path at the first thing
/// the message does not allow (as `saves[3].zoneID.zoneName: expected a string`). A message
/// type has one reader (`JSONReadable`); nothing else decodes it.
///
/// ```swift
/// var reader = MessageReader(bytes)
/// var token: String?
/// try reader.object { key, reader in
///     switch key {
///     case "token": token = try reader.string()
///     default: try reader.skip()
///     }
/// }
/// try reader.finish()
/// guard let token else { throw reader.missing("token") }
/// ```
public struct MessageReader {
    public var scanner: JSONScanner
    /// The path as it is walked. A key is kept as where it starts in the bytes and made a
    /// String only when the path is read (for an error): keeping the key itself retained and
    /// released it for every member of every message read.
    var steps: [Step]

    enum Step: Sendable {
        case given(MessagePath.Component)
        case key(at: Int)
        case index(Int)
    }

    public init(_ bytes: UnsafeBufferPointer<UInt8>, path: [MessagePath.Component] = []) {
        scanner = JSONScanner(bytes)
        steps = path.map { .given($0) }
    }

    /// A reader of the same bytes at the same path (a part of a split array).
    init(_ bytes: UnsafeBufferPointer<UInt8>, steps: [Step]) {
        scanner = JSONScanner(bytes)
        self.steps = steps
    }

    /// Where the reader is: the keys and indices from the message's top.
    public var path: [MessagePath.Component] {
        steps.map { step in
            switch step {
            case let .given(component): component
            case let .key(start): .key(key(at: start))
            case let .index(index): .index(index)
            }
        }
    }

    private func key(at start: Int) -> String {
        var keyScanner = JSONScanner(UnsafeBufferPointer(rebasing: scanner.bytes[start...]))
        return keyScanner.string() ?? ""
    }

    /// Only whitespace is left (the message was one value).
    public mutating func finish() throws(MessageReadError) {
        guard scanner.atEnd else { throw error(.malformed) }
    }

    // MARK: Containers

    /// Walks an object: `member` reads the value of each member (given its key), with the key
    /// on the path. A repeated key is read again (the last one stands, as in `JSONParser`).
    public mutating func object(_ member: (_ key: String, _ reader: inout MessageReader) throws(MessageReadError) -> Void) throws(MessageReadError) {
        let start = scanner.index
        guard scanner.beginObject() else { throw mismatch(from: start, expected: .object) }
        while let key = scanner.nextKey() {
            steps.append(.key(at: scanner.keyStart))
            try member(key, &self)
            steps.removeLast()
        }
        guard scanner.finishedObject else { throw error(.malformed) }
    }

    /// Walks an array: `element` reads each element, with its index on the path.
    public mutating func array(_ element: (_ reader: inout MessageReader) throws(MessageReadError) -> Void) throws(MessageReadError) {
        let start = scanner.index
        guard scanner.beginArray() else { throw mismatch(from: start, expected: .array) }
        var index = 0
        while scanner.nextElement() {
            steps.append(.index(index))
            try element(&self)
            steps.removeLast()
            index += 1
        }
        guard scanner.finishedArray else { throw error(.malformed) }
    }

    /// The elements of an array, each read by `element`; nil for null.
    public mutating func optionalArray<T>(_ element: (_ reader: inout MessageReader) throws(MessageReadError) -> T) throws(MessageReadError) -> [T]? {
        if readNull() { return nil }
        var items: [T] = []
        try array { (reader) throws(MessageReadError) in items.append(try element(&reader)) }
        return items
    }

    // MARK: Values

    /// Consumes a JSON null; false (nothing consumed) for anything else.
    public mutating func readNull() -> Bool {
        guard scanner.peek() == UInt8(ascii: "n") else { return false }
        let start = scanner.index
        if scanner.optionalString() == .some(nil) { return true }
        scanner.rewind(to: start)
        return false
    }

    public mutating func string() throws(MessageReadError) -> String {
        let start = scanner.index
        guard let value = scanner.string() else { throw mismatch(from: start, expected: .string) }
        return value
    }

    public mutating func optionalString() throws(MessageReadError) -> String? {
        readNull() ? nil : try string()
    }

    public mutating func bool() throws(MessageReadError) -> Bool {
        let start = scanner.index
        guard let value = scanner.bool() else { throw mismatch(from: start, expected: .boolean) }
        return value
    }

    public mutating func optionalBool() throws(MessageReadError) -> Bool? {
        readNull() ? nil : try bool()
    }

    /// A number as a Double (an integer is read as one, then converted, as a tree has it).
    public mutating func double() throws(MessageReadError) -> Double {
        switch try numberValue(expected: .number) {
        case let .int(number): return Double(number)
        case let .double(number): return number
        default: throw error(.expected(.number))
        }
    }

    public mutating func optionalDouble() throws(MessageReadError) -> Double? {
        readNull() ? nil : try double()
    }

    /// A whole number that fits an `Int` (`1.0` is one; `1.5` is not).
    public mutating func int() throws(MessageReadError) -> Int {
        switch try numberValue(expected: .integer) {
        case let .int(number): return number
        case let .double(number):
            guard let whole = Int(exactly: number) else { throw error(.invalid("Parsed JSON number <\(number)> does not fit in Int.")) }
            return whole
        default: throw error(.expected(.integer))
        }
    }

    public mutating func optionalInt() throws(MessageReadError) -> Int? {
        readNull() ? nil : try int()
    }

    /// A string that names one of `T`'s cases.
    public mutating func rawValue<T: RawRepresentable>(_ type: T.Type) throws(MessageReadError) -> T where T.RawValue == String {
        let text = try string()
        guard let value = T(rawValue: text) else { throw error(.invalid("Cannot initialize \(T.self) from invalid String value \(text)")) }
        return value
    }

    public mutating func optionalRawValue<T: RawRepresentable>(_ type: T.Type) throws(MessageReadError) -> T? where T.RawValue == String {
        readNull() ? nil : try rawValue(type)
    }

    /// The value here as a tree (for open-ended values: a record's fields not in stored form,
    /// error details).
    public mutating func value() throws(MessageReadError) -> JSONValue {
        let bytes = try valueBytes()
        do { return try JSONParser.parse(bytes) } catch { throw self.error(.malformed) }
    }

    /// The value here decoded as `T` declares (for nested types that are not messages of their
    /// own), its decoding errors named by this path.
    public mutating func decode<T: Decodable>(_ type: T.Type) throws(MessageReadError) -> T {
        let tree = try value()
        do {
            return try JSONValueDecoder().decode(type, from: tree)
        } catch let failure as DecodingError {
            throw MessageReadError(decoding: failure, under: path)
        } catch {
            throw self.error(.invalid("\(error)"))
        }
    }

    /// The bytes of the value here, checked against the JSON grammar, consumed.
    public mutating func valueBytes() throws(MessageReadError) -> UnsafeBufferPointer<UInt8> {
        scanner.skipWhitespace()
        let start = scanner.index
        guard scanner.skipValue() else { throw error(.malformed) }
        return UnsafeBufferPointer(rebasing: scanner.bytes[start..<scanner.index])
    }

    /// The bytes of the value here when `end` (given the buffer and the value's first index)
    /// answers where it ends, consumed; nil, with nothing consumed, when it does not.
    public mutating func text(endingWith end: (UnsafeBufferPointer<UInt8>, Int) -> Int?) -> UnsafeBufferPointer<UInt8>? {
        scanner.text(endingWith: end)
    }

    /// Skips the value here (checked against the JSON grammar).
    public mutating func skip() throws(MessageReadError) {
        guard scanner.skipValue() else { throw error(.malformed) }
    }

    // MARK: Errors

    /// `key` of the object just read was required.
    public func missing(_ key: String) -> MessageReadError {
        MessageReadError(path: path + [.key(key)], problem: .missing)
    }

    /// The value just read is not one the message allows.
    public func invalid(_ message: String) -> MessageReadError { error(.invalid(message)) }

    public func error(_ problem: MessageReadError.Problem) -> MessageReadError {
        MessageReadError(path: path, problem: problem)
    }

    private mutating func numberValue(expected: MessageReadError.Kind) throws(MessageReadError) -> JSONValue {
        let start = scanner.index
        switch scanner.peek() {
        case UInt8(ascii: "-")?, (UInt8(ascii: "0")...UInt8(ascii: "9"))?:
            guard let number = scanner.number() else { throw error(.malformed) }
            return number
        default:
            throw mismatch(from: start, expected: expected)
        }
    }

    /// Why the value at `start` is not a `kind`: null, another well-formed value, or not JSON.
    private mutating func mismatch(from start: Int, expected kind: MessageReadError.Kind) -> MessageReadError {
        scanner.rewind(to: start)
        if readNull() { return error(.null(kind)) }
        scanner.rewind(to: start)
        return scanner.skipValue() ? error(.expected(kind)) : error(.malformed)
    }
}

/// Where a value stands in a message: `saves[3].zoneID.zoneName`.
public enum MessagePath {
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public static func text(_ components: [Component]) -> String {
        var text = ""
        for component in components {
            switch component {
            case let .index(index): text += "[\(index)]"
            case let .key(key): text += (text.isEmpty ? "" : ".") + key
            }
        }
        return text
    }
}

/// What a `MessageReader` found wrong, and where.
public struct MessageReadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What a value should have been.
    public enum Kind: String, Sendable, Hashable {
        case string = "a string", integer = "an integer", number = "a number", boolean = "a boolean"
        case array = "an array", object = "an object"
    }

    public enum Problem: Sendable, Hashable {
        /// A required member is absent (the path ends with its key).
        case missing
        /// JSON null where a value is required.
        case null(Kind)
        /// A value of another kind.
        case expected(Kind)
        /// The right kind but a value the message does not allow.
        case invalid(String)
        /// Not JSON at all.
        case malformed
    }

    public var path: [MessagePath.Component]
    public var problem: Problem

    public init(path: [MessagePath.Component], problem: Problem) {
        self.path = path
        self.problem = problem
    }

    /// `path` with the given components before it (a message read inside a larger one).
    public func under(_ prefix: [MessagePath.Component]) -> MessageReadError {
        MessageReadError(path: prefix + path, problem: problem)
    }

    public var description: String {
        let field = path.isEmpty ? "the message" : MessagePath.text(path)
        switch problem {
        case .missing: return "\(field): required"
        case let .null(kind): return "\(field): null; expected \(kind.rawValue)"
        case let .expected(kind): return "\(field): expected \(kind.rawValue)"
        case let .invalid(message): return "\(field): \(message)"
        case .malformed: return "\(field): not valid JSON"
        }
    }

    /// A decoding failure of a nested `Decodable` value at `prefix`.
    init(decoding failure: DecodingError, under prefix: [MessagePath.Component]) {
        func components(_ keys: [any CodingKey]) -> [MessagePath.Component] {
            keys.map { key in key.intValue.map(MessagePath.Component.index) ?? .key(key.stringValue) }
        }
        switch failure {
        case let .keyNotFound(key, context):
            self.init(path: prefix + components(context.codingPath + [key]), problem: .missing)
        case let .valueNotFound(type, context):
            self.init(path: prefix + components(context.codingPath), problem: .null(Self.kind(of: type)))
        case let .typeMismatch(type, context):
            self.init(path: prefix + components(context.codingPath), problem: .expected(Self.kind(of: type)))
        case let .dataCorrupted(context):
            self.init(path: prefix + components(context.codingPath), problem: .invalid(context.debugDescription))
        @unknown default:
            self.init(path: prefix, problem: .invalid("\(failure)"))
        }
    }

    private static func kind(of type: Any.Type) -> Kind {
        let name = String(describing: type)
        switch name {
        case "String": return .string
        case "Int", "Int64", "UInt64", "Int32", "UInt32", "UInt": return .integer
        case "Double", "Float": return .number
        case "Bool": return .boolean
        default: return name.hasPrefix("Array") || name.hasPrefix("[") ? .array : .object
        }
    }

    /// The `DecodingError` this is under a `Decoder` at `codingPath` (a reader run inside a
    /// `Decodable` conformance), so callers that map decoding errors name the same field.
    public func decodingError(at codingPath: [any CodingKey]) -> DecodingError {
        let keys = codingPath + path.map { component -> any CodingKey in
            switch component {
            case let .key(key): return PathKey(stringValue: key)
            case let .index(index): return PathKey(intValue: index)
            }
        }
        switch problem {
        case .missing:
            return .keyNotFound(keys.last ?? PathKey(stringValue: ""), .init(codingPath: Array(keys.dropLast()), debugDescription: description))
        case let .null(kind):
            return .valueNotFound(Self.type(of: kind), .init(codingPath: keys, debugDescription: description))
        case let .expected(kind):
            return .typeMismatch(Self.type(of: kind), .init(codingPath: keys, debugDescription: description))
        case let .invalid(message):
            return .dataCorrupted(.init(codingPath: keys, debugDescription: message))
        case .malformed:
            return .dataCorrupted(.init(codingPath: keys, debugDescription: description))
        }
    }

    private static func type(of kind: Kind) -> Any.Type {
        switch kind {
        case .string: return String.self
        case .integer: return Int.self
        case .number: return Double.self
        case .boolean: return Bool.self
        case .array: return [JSONValue].self
        case .object: return [String: JSONValue].self
        }
    }

    private struct PathKey: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(stringValue: String) { self.stringValue = stringValue }
        init(intValue: Int) {
            stringValue = "\(intValue)"
            self.intValue = intValue
        }
    }
}

/// A message type that reads itself from its JSON bytes (`MessageReader`): its one reader.
/// Services read such params from the request's bytes with it, and its `Decodable`
/// conformance (`init(fromReadable:)`) goes through it too.
public protocol JSONReadable {
    init(reading reader: inout MessageReader) throws(MessageReadError)
}

extension JSONReadable {
    /// Reads a whole text (one value, nothing after it but whitespace).
    public static func read(_ bytes: UnsafeBufferPointer<UInt8>) throws(MessageReadError) -> Self {
        var reader = MessageReader(bytes)
        let value = try Self(reading: &reader)
        try reader.finish()
        return value
    }

    public static func read(_ text: String) throws(MessageReadError) -> Self {
        var bytes = Array(text.utf8)
        return try bytes.withUnsafeMutableBufferPointer { (buffer) throws(MessageReadError) -> Self in
            try read(UnsafeBufferPointer(buffer))
        }
    }

    /// For a `Decodable` conformance: the decoder's value, written out and read by the reader,
    /// its errors as `DecodingError`s at the decoder's path (for messages that nest this one
    /// and are decoded as a tree).
    public init(fromReadable decoder: any Decoder) throws {
        let tree = try JSONValue(from: decoder)
        do {
            self = try Self.read(JSONWriter.text(tree))
        } catch {
            throw error.decodingError(at: decoder.codingPath)
        }
    }
}

extension JSONReadable {
    /// Reads a value a client holds as a tree (error details, a reply parsed whole), written out
    /// and read by the one reader.
    public init(tree: JSONValue) throws(MessageReadError) {
        self = try Self.read(JSONWriter.text(tree))
    }
}
