import FoundationEssentials

/// `Encodable` values as JSON text: the package's one writer for typed values, on `JSONWriter`'s
/// string escaping. Objects keep their keys in the order `encode(to:)` writes them unless
/// `sortedKeys` is set. Forms follow what clients already read: whole doubles without a
/// fraction (`1`, not `1.0`), `Data` as base64, `URL` as its absolute string, and a non-finite
/// number is an error (JSON cannot hold it).
public struct JSONTextEncoder: Sendable {
    public struct Options: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Object keys in sorted order: text that compares equal whenever the values do.
        public static let sortedKeys = Options(rawValue: 1 << 0)
        /// Two-space indentation and `"key" : value`, for people reading the output.
        public static let prettyPrinted = Options(rawValue: 1 << 1)
        /// "/" written as "\/", for output whose readers were given that form.
        public static let escapingSlashes = Options(rawValue: 1 << 2)
    }

    public var options: Options

    public init(options: Options = []) {
        self.options = options
    }

    public func text(_ value: some Encodable) throws -> String {
        // Compact text in the order encode(to:) writes is written straight; any other form (and
        // any value the straight writer gives up on) through the tree.
        if options.isEmpty, let text = JSONStreamWriter.text(value) { return text }
        return try Self.treeText(value, options: options)
    }

    /// `value`'s text through the node tree, the reference for every form.
    static func treeText(_ value: some Encodable, options: Options = []) throws -> String {
        let root = try JSONNodeEncoder(options: options, codingPath: []).node(for: value)
        var out = ""
        JSONNodeLayout(options: options).write(root, to: &out, depth: 0)
        return out
    }

    public func bytes(_ value: some Encodable) throws -> [UInt8] {
        Array(try text(value).utf8)
    }
}

/// An encoded value before layout. Containers are references so a container handed out by an
/// `Encoder` can still be filled after its parent stored it; `pending` is a super-encoder whose
/// value is read when the tree is written.
enum JSONNode {
    case text(String)
    case array(JSONArrayNode)
    case object(JSONObjectNode)
    case pending(JSONNodeEncoder)
}

final class JSONArrayNode {
    var items: [JSONNode] = []
}

final class JSONObjectNode {
    private(set) var keys: [String] = []
    private(set) var values: [String: JSONNode] = [:]

    /// A key written twice keeps its first place and its last value, as a dictionary would.
    func set(_ key: String, _ node: JSONNode) {
        if values.updateValue(node, forKey: key) == nil { keys.append(key) }
    }
}

/// Writes a node tree as text, compact or pretty.
struct JSONNodeLayout {
    let options: JSONTextEncoder.Options

    func write(_ node: JSONNode, to out: inout String, depth: Int) {
        let pretty = options.contains(.prettyPrinted)
        switch node {
        case let .text(text):
            out += text
        case let .pending(encoder):
            write(encoder.node ?? .object(JSONObjectNode()), to: &out, depth: depth)
        case let .array(array):
            out += "["
            for (index, item) in array.items.enumerated() {
                if index > 0 { out += "," }
                if pretty { newline(&out, depth + 1) }
                write(item, to: &out, depth: depth + 1)
            }
            if pretty { closing(&out, depth, empty: array.items.isEmpty) }
            out += "]"
        case let .object(object):
            out += "{"
            let keys = options.contains(.sortedKeys) ? object.keys.sorted() : object.keys
            for (index, key) in keys.enumerated() {
                if index > 0 { out += "," }
                if pretty { newline(&out, depth + 1) }
                JSONWriter.appendString(key, to: &out, escapingSlashes: options.contains(.escapingSlashes))
                out += pretty ? " : " : ":"
                write(object.values[key]!, to: &out, depth: depth + 1)
            }
            if pretty { closing(&out, depth, empty: keys.isEmpty) }
            out += "}"
        }
    }

    private func newline(_ out: inout String, _ depth: Int) {
        out += "\n"
        out += String(repeating: "  ", count: depth)
    }

    /// An empty container still gets its lines (`[\n\n]`), the form pretty output has always had.
    private func closing(_ out: inout String, _ depth: Int, empty: Bool) {
        if empty { out += "\n" }
        newline(&out, depth)
    }
}

/// The `Encoder` behind `JSONTextEncoder`: each value becomes a node, scalars already as text.
final class JSONNodeEncoder: Encoder {
    let options: JSONTextEncoder.Options
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// What `encode(to:)` wrote here; nil until it asks for a container.
    var node: JSONNode?

    init(options: JSONTextEncoder.Options, codingPath: [any CodingKey]) {
        self.options = options
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: JSONObjectNode
        if case let .object(existing)? = node { object = existing } else {
            object = JSONObjectNode()
            node = .object(object)
        }
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(encoder: self, object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: JSONArrayNode
        if case let .array(existing)? = node { array = existing } else {
            array = JSONArrayNode()
            node = .array(array)
        }
        return JSONUnkeyedContainer(encoder: self, array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueContainer(encoder: self)
    }

    /// `value`'s node: the types JSON writes in its own forms first, then `encode(to:)`. A value
    /// that writes nothing is an empty object.
    func node(for value: some Encodable, at path: [any CodingKey]? = nil) throws -> JSONNode {
        let path = path ?? codingPath
        switch value {
        case let text as String: return string(text)
        case let number as Double: return try double(number, path)
        case let number as Float: return try float(number, path)
        case let flag as Bool: return .text(flag ? "true" : "false")
        case let number as Int: return .text(String(number))
        case let number as Int64: return .text(String(number))
        case let data as Data: return string(data.base64EncodedString())
        case let url as URL: return string(url.absoluteString)
        case let decimal as Decimal: return .text(decimal.description)
        default:
            let child = JSONNodeEncoder(options: options, codingPath: path)
            try value.encode(to: child)
            return child.node ?? .object(JSONObjectNode())
        }
    }

    func string(_ text: String) -> JSONNode {
        var out = ""
        JSONWriter.appendString(text, to: &out, escapingSlashes: options.contains(.escapingSlashes))
        return .text(out)
    }

    func double(_ number: Double, _ path: [any CodingKey]) throws -> JSONNode {
        guard number.isFinite else { throw nonFinite(number, path) }
        var out = ""
        JSONWriter.appendNumber(number, to: &out)
        return .text(out)
    }

    func float(_ number: Float, _ path: [any CodingKey]) throws -> JSONNode {
        guard number.isFinite else { throw nonFinite(number, path) }
        let text = number.description
        return .text(text.hasSuffix(".0") ? String(text.dropLast(2)) : text)
    }

    func integer(_ number: some FixedWidthInteger) -> JSONNode { .text(String(number)) }

    private func nonFinite(_ number: Any, _ path: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue(number, .init(codingPath: path, debugDescription: "\(number) is not a number JSON can hold."))
    }
}

/// A position in an array, as a coding key for error paths.
struct JSONIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: JSONNodeEncoder
    let object: JSONObjectNode
    let codingPath: [any CodingKey]

    private func put(_ node: JSONNode, _ key: Key) { object.set(key.stringValue, node) }

    mutating func encodeNil(forKey key: Key) throws { put(.text("null"), key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.text(value ? "true" : "false"), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(encoder.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(try encoder.double(value, codingPath + [key]), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(try encoder.float(value, codingPath + [key]), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(encoder.integer(value), key) }
    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        put(try encoder.node(for: value, at: codingPath + [key]), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = JSONObjectNode()
        put(.object(nested), key)
        return KeyedEncodingContainer(JSONKeyedContainer<NestedKey>(encoder: encoder, object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = JSONArrayNode()
        put(.array(nested), key)
        return JSONUnkeyedContainer(encoder: encoder, array: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue) }

    private func superEncoder(named name: String) -> any Encoder {
        let child = JSONNodeEncoder(options: encoder.options, codingPath: codingPath)
        object.set(name, .pending(child))
        return child
    }
}

/// A container that puts one value at a time in one place (the array's end, the encoder's own
/// node), with one coding path for the value's errors: the unkeyed and the single-value
/// container. Codable's overloads for each primitive are written once here, for both.
protocol JSONValueSlot {
    var encoder: JSONNodeEncoder { get }
    /// The coding path of the value put next.
    var nextPath: [any CodingKey] { get }
    func put(_ node: JSONNode)
}

extension JSONValueSlot {
    mutating func encodeNil() throws { put(.text("null")) }
    mutating func encode(_ value: Bool) throws { put(.text(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { put(encoder.string(value)) }
    mutating func encode(_ value: Double) throws { put(try encoder.double(value, nextPath)) }
    mutating func encode(_ value: Float) throws { put(try encoder.float(value, nextPath)) }
    mutating func encode(_ value: Int) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: Int8) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: Int16) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: Int32) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: Int64) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: UInt) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: UInt8) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: UInt16) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: UInt32) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: UInt64) throws { put(encoder.integer(value)) }
    mutating func encode(_ value: some Encodable) throws { put(try encoder.node(for: value, at: nextPath)) }
}

struct JSONUnkeyedContainer: UnkeyedEncodingContainer, JSONValueSlot {
    let encoder: JSONNodeEncoder
    let array: JSONArrayNode
    let codingPath: [any CodingKey]
    var count: Int { array.items.count }

    func put(_ node: JSONNode) { array.items.append(node) }
    var nextPath: [any CodingKey] { codingPath + [JSONIndexKey(count)] }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = JSONObjectNode()
        let nestedPath = nextPath
        put(.object(nested))
        return KeyedEncodingContainer(JSONKeyedContainer<NestedKey>(encoder: encoder, object: nested, codingPath: nestedPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = JSONArrayNode()
        let nestedPath = nextPath
        put(.array(nested))
        return JSONUnkeyedContainer(encoder: encoder, array: nested, codingPath: nestedPath)
    }

    mutating func superEncoder() -> any Encoder {
        let child = JSONNodeEncoder(options: encoder.options, codingPath: nextPath)
        put(.pending(child))
        return child
    }
}

struct JSONSingleValueContainer: SingleValueEncodingContainer, JSONValueSlot {
    let encoder: JSONNodeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }
    var nextPath: [any CodingKey] { encoder.codingPath }

    func put(_ node: JSONNode) { encoder.node = node }
}
