import FoundationEssentials

/// `JSONTextEncoder`'s compact form written straight into one text while `encode(to:)` runs,
/// with no node tree in between (building the tree, a class and a dictionary per object and a
/// string per scalar, was most of the cost of a small reply). It takes the way every
/// conformance in this package encodes: each container filled before its parent's next member.
/// Anything else — a nested container written to after its parent moved on, a key written twice,
/// a super-encoder, an error — gives up (`text` answers nil) and the caller encodes through the
/// tree, whose output is the reference; so the text is always what the tree would have written.
final class JSONStreamWriter {
    // Only this writer's own calls touch it, one at a time: no run-time exclusivity check.
    @exclusivity(unchecked) var out = ""
    /// Set once a value was encoded in a way this writer does not follow; everything after it is ignored.
    var failed = false
    /// The open containers, innermost last.
    private var frames: [Frame] = []
    /// The keys written so far in the open objects, each object's after the ones of its parent.
    private var keys: [String] = []
    private var nextFrameID = 0

    private struct Frame {
        let id: Int
        let closer: String
        var count = 0
        /// Where this object's keys start in `keys`.
        let firstKey: Int
        /// An object's keys once it has many (a dictionary): looked up, not scanned.
        var keySet: Set<String>?
    }

    /// An object with more keys than this checks for a repeated key in a set.
    private static let scannedKeys = 16

    /// `value`'s compact text, or nil when it must be encoded through the tree.
    static func text(_ value: some Encodable) -> String? {
        let writer = JSONStreamWriter()
        do { try writer.write(value, parent: nil, key: nil) } catch { return nil }
        guard !writer.failed, writer.frames.isEmpty else { return nil }
        return writer.out
    }

    // MARK: Values

    /// Writes one value: JSON's own forms first (as `JSONNodeEncoder.node(for:)` has them),
    /// then `encode(to:)` through a child encoder, whose container is closed when it returns.
    func write<Value: Encodable>(_ value: Value, parent: JSONStreamEncoder?, key: (any CodingKey)?) throws {
        // The type compared, not cast: a cast per candidate type was most of a small value's cost.
        if Value.self == String.self {
            JSONWriter.appendString(unsafeBitCast(value, to: String.self), to: &out)
        } else if Value.self == Int.self {
            out += String(unsafeBitCast(value, to: Int.self))
        } else if Value.self == Bool.self {
            out += unsafeBitCast(value, to: Bool.self) ? "true" : "false"
        } else if Value.self == Double.self {
            try write(unsafeBitCast(value, to: Double.self))
        } else if Value.self == Int64.self {
            out += String(unsafeBitCast(value, to: Int64.self))
        } else if Value.self == Float.self {
            try write(unsafeBitCast(value, to: Float.self))
        } else if Value.self == Data.self || Value.self == URL.self || Value.self == Decimal.self {
            switch value {
            case let data as Data: JSONWriter.appendString(data.base64EncodedString(), to: &out)
            case let url as URL: JSONWriter.appendString(url.absoluteString, to: &out)
            case let decimal as Decimal: out += decimal.description
            default: break
            }
        } else {
            let child = JSONStreamEncoder(writer: self, parent: parent, key: key, depth: frames.count)
            try value.encode(to: child)
            if failed { return }
            if child.frameID != nil {
                // Its container (and any it nested) is done: close them, innermost first.
                guard frames.count > child.depth, frames[child.depth].id == child.frameID else { return fail() }
                while frames.count > child.depth { close() }
            } else if !child.wroteValue {
                out += "{}"
            }
        }
    }

    func write(_ number: Double) throws {
        guard number.isFinite else { throw Unsupported() }
        JSONWriter.appendNumber(number, to: &out)
    }

    func write(_ number: Float) throws {
        guard number.isFinite else { throw Unsupported() }
        let text = number.description
        out += text.hasSuffix(".0") ? text.dropLast(2) : Substring(text)
    }

    func write(_ number: some FixedWidthInteger) { out += String(number) }

    // MARK: Containers

    /// Opens a container (`{` or `[`) and answers its id.
    func open(object: Bool) -> Int {
        out += object ? "{" : "["
        nextFrameID += 1
        frames.append(Frame(id: nextFrameID, closer: object ? "}" : "]", firstKey: keys.count))
        return nextFrameID
    }

    private func close() {
        let frame = frames.removeLast()
        out += frame.closer
        keys.removeSubrange(frame.firstKey...)
    }

    /// Whether `frame` is open and whether it is an object (`{`).
    func isOpen(_ frame: Int, object: Bool) -> Bool {
        frames.contains { $0.id == frame && ($0.closer == "}") == object }
    }

    /// Makes `frame` the innermost open container again, closing the ones nested in it (they are
    /// done: their parent moved on), and writes the separator before its next member. False, with
    /// the writer failed, when `frame` was closed already.
    func next(in frame: Int) -> Bool {
        guard !failed else { return false }
        guard let index = frames.lastIndex(where: { $0.id == frame }) else { fail(); return false }
        while frames.count > index + 1 { close() }
        if frames[index].count > 0 { out += "," }
        frames[index].count += 1
        return true
    }

    /// `next(in:)` for an object's member, and its key; false (failed) for a key the object has.
    func next(in frame: Int, key: String) -> Bool {
        guard next(in: frame) else { return false }
        let index = frames.count - 1
        if frames[index].keySet != nil {
            guard frames[index].keySet!.insert(key).inserted else { fail(); return false }
        } else {
            guard !keys[frames[index].firstKey...].contains(key) else { fail(); return false }
            keys.append(key)
            if keys.count - frames[index].firstKey > Self.scannedKeys {
                frames[index].keySet = Set(keys[frames[index].firstKey...])
            }
        }
        JSONWriter.appendString(key, to: &out)
        out += ":"
        return true
    }

    /// The members written so far in `frame`.
    func count(of frame: Int) -> Int { frames.last { $0.id == frame }?.count ?? 0 }

    /// Whether nothing is open inside the container a value at `depth` belongs to.
    func isInnermost(depth: Int) -> Bool { frames.count == depth }

    func fail() { failed = true }

    /// Thrown to stop at a value only the tree writes (its error then comes from the tree).
    struct Unsupported: Error {}
}

/// The `Encoder` of one value being streamed. It knows its parent and key, not its whole path,
/// which is built only when asked for.
final class JSONStreamEncoder: Encoder {
    let writer: JSONStreamWriter
    let parent: JSONStreamEncoder?
    let key: (any CodingKey)?
    /// How many containers were open when this value started.
    let depth: Int
    /// The container this value opened.
    var frameID: Int?
    /// Whether a single value was written for it.
    var wroteValue = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(writer: JSONStreamWriter, parent: JSONStreamEncoder?, key: (any CodingKey)?, depth: Int) {
        self.writer = writer
        self.parent = parent
        self.key = key
        self.depth = depth
    }

    var codingPath: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node: JSONStreamEncoder? = self
        while let current = node, let key = current.key {
            keys.append(key)
            node = current.parent
        }
        return keys.reversed()
    }

    /// The container this value writes into: the one it opened (asked again), or a new one.
    private func frame(object: Bool) -> Int {
        if let frameID {
            if !writer.isOpen(frameID, object: object) { writer.fail() }
            return frameID
        }
        guard !wroteValue, writer.isInnermost(depth: depth) else { writer.fail(); return 0 }
        let id = writer.open(object: object)
        frameID = id
        return id
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(JSONStreamKeyedContainer<Key>(encoder: self, frame: frame(object: true), path: nil))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        JSONStreamUnkeyedContainer(encoder: self, frame: frame(object: false), path: nil)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { JSONStreamSingleValue(encoder: self) }

    /// Before this value's single value: nothing written for it yet, nothing open inside.
    func beginSingleValue() -> Bool {
        guard !writer.failed else { return false }
        guard frameID == nil, !wroteValue, writer.isInnermost(depth: depth) else { writer.fail(); return false }
        wroteValue = true
        return true
    }
}

struct JSONStreamKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: JSONStreamEncoder
    let frame: Int
    /// The path of a nested container (its encoder's path is its parent's).
    let path: [any CodingKey]?
    var writer: JSONStreamWriter { encoder.writer }
    var codingPath: [any CodingKey] { path ?? encoder.codingPath }

    private func member(_ key: Key) -> Bool { writer.next(in: frame, key: key.stringValue) }

    mutating func encodeNil(forKey key: Key) throws { if member(key) { writer.out += "null" } }
    mutating func encode(_ value: Bool, forKey key: Key) throws { if member(key) { writer.out += value ? "true" : "false" } }
    mutating func encode(_ value: String, forKey key: Key) throws { if member(key) { JSONWriter.appendString(value, to: &writer.out) } }
    mutating func encode(_ value: Double, forKey key: Key) throws { if member(key) { try writer.write(value) } }
    mutating func encode(_ value: Float, forKey key: Key) throws { if member(key) { try writer.write(value) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { if member(key) { writer.write(value) } }
    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        if member(key) { try writer.write(value, parent: path == nil ? encoder : nil, key: path == nil ? key : nil) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let id = member(key) ? writer.open(object: true) : 0
        return KeyedEncodingContainer(JSONStreamKeyedContainer<NestedKey>(encoder: encoder, frame: id, path: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let id = member(key) ? writer.open(object: false) : 0
        return JSONStreamUnkeyedContainer(encoder: encoder, frame: id, path: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { unsupported() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { unsupported() }

    private func unsupported() -> any Encoder {
        writer.fail()
        return JSONStreamEncoder(writer: writer, parent: nil, key: nil, depth: 0)
    }
}

struct JSONStreamUnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: JSONStreamEncoder
    let frame: Int
    let path: [any CodingKey]?
    var writer: JSONStreamWriter { encoder.writer }
    var codingPath: [any CodingKey] { path ?? encoder.codingPath }
    var count: Int { writer.count(of: frame) }

    private func element() -> Bool { writer.next(in: frame) }

    mutating func encodeNil() throws { if element() { writer.out += "null" } }
    mutating func encode(_ value: Bool) throws { if element() { writer.out += value ? "true" : "false" } }
    mutating func encode(_ value: String) throws { if element() { JSONWriter.appendString(value, to: &writer.out) } }
    mutating func encode(_ value: Double) throws { if element() { try writer.write(value) } }
    mutating func encode(_ value: Float) throws { if element() { try writer.write(value) } }
    mutating func encode(_ value: Int) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: Int8) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: Int16) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: Int32) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: Int64) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: UInt) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: UInt8) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: UInt16) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: UInt32) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: UInt64) throws { if element() { writer.write(value) } }
    mutating func encode(_ value: some Encodable) throws {
        let index = count
        if element() { try writer.write(value, parent: path == nil ? encoder : nil, key: path == nil ? JSONIndexKey(index) : nil) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nestedPath = codingPath + [JSONIndexKey(count)]
        let id = element() ? writer.open(object: true) : 0
        return KeyedEncodingContainer(JSONStreamKeyedContainer<NestedKey>(encoder: encoder, frame: id, path: nestedPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nestedPath = codingPath + [JSONIndexKey(count)]
        let id = element() ? writer.open(object: false) : 0
        return JSONStreamUnkeyedContainer(encoder: encoder, frame: id, path: nestedPath)
    }

    mutating func superEncoder() -> any Encoder {
        writer.fail()
        return JSONStreamEncoder(writer: writer, parent: nil, key: nil, depth: 0)
    }
}

struct JSONStreamSingleValue: SingleValueEncodingContainer {
    let encoder: JSONStreamEncoder
    var writer: JSONStreamWriter { encoder.writer }
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { if encoder.beginSingleValue() { writer.out += "null" } }
    mutating func encode(_ value: Bool) throws { if encoder.beginSingleValue() { writer.out += value ? "true" : "false" } }
    mutating func encode(_ value: String) throws { if encoder.beginSingleValue() { JSONWriter.appendString(value, to: &writer.out) } }
    mutating func encode(_ value: Double) throws { if encoder.beginSingleValue() { try writer.write(value) } }
    mutating func encode(_ value: Float) throws { if encoder.beginSingleValue() { try writer.write(value) } }
    mutating func encode(_ value: Int) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: Int8) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: Int16) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: Int32) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: Int64) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: UInt) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: UInt8) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: UInt16) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: UInt32) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: UInt64) throws { if encoder.beginSingleValue() { writer.write(value) } }
    mutating func encode(_ value: some Encodable) throws {
        if encoder.beginSingleValue() { try writer.write(value, parent: encoder.parent, key: encoder.key) }
    }
}
