import MeowWire

/// Record fields as their canonical text, and the one writer of it: a JSON object with its keys
/// in ascending order and no whitespace, each field `{"type":…,"value":…}` (or whatever value a
/// client gave it) written by `JSONWriter` with whole doubles below 1e15 as integers, null fields
/// left out (a null is the field's absence). The sync-service stores this text and sends it as
/// it is; a device builds it straight from its rows and keeps it as the record's server fields.
/// `StoredFields` is its validator: text in stored form is exactly what this writer writes for
/// the fields it holds (the converse holds for the five value types it knows).
public struct RecordFields: Sendable, Hashable {
    /// The canonical text.
    public let text: String

    /// The fields written from values (the one writer); null fields are left out.
    public init(_ fields: [String: JSONValue]) {
        var text = ""
        Self.write(fields, to: &text)
        self.text = text
    }

    /// `text` as it is when it is in stored form (`StoredFields`), which a save keeps without
    /// writing it again; nil otherwise.
    public init?(validating text: String) {
        guard StoredFields.isStoredForm(text) else { return nil }
        self.text = text
    }

    /// The fields written from values straight into `out` (a message that holds them).
    /// `keepingNulls`: a save's null fields stay, as the removals they are (a record's fields
    /// hold none).
    public static func write(_ fields: [String: JSONValue], keepingNulls: Bool = false, to out: inout String) {
        var builder = Builder()
        for name in fields.keys.sorted() {
            guard let field = fields[name], keepingNulls || !field.isNull else { continue }
            builder.field(name, field)
        }
        out += builder.finish()
    }

    /// `fields` without null values (the same dictionary when it has none): what the text holds.
    public static func withoutNulls(_ fields: [String: JSONValue]) -> [String: JSONValue] {
        fields.values.contains(.null) ? fields.filter { !$0.value.isNull } : fields
    }

    /// Writes a fields object field by field, keys ascending (each caller's order: a device's
    /// fields layout is sorted once per entity). Values go in by type without a tree: a batch of
    /// 400 records built as trees and then written cost more than the rest of a send.
    ///
    ///     var builder = RecordFields.Builder()
    ///     builder.open(RecordFields.Builder.opening(name: "CD_note", type: "string"))
    ///     builder.string("before breakfast")
    ///     builder.close()
    ///     let text = builder.finish()
    public struct Builder {
        /// The text so far as UTF-8 bytes, made a string once by `finish()`: a record's text is
        /// some thirty pieces, and a string's append costs several times copying the bytes.
        private var bytes: [UInt8] = [UInt8(ascii: "{")]
        private var first = true
        #if DEBUG
        /// The last field's name: keys must ascend (checked in debug builds).
        private var lastName: String?
        #endif

        public init() {}

        /// A writer whose text has room for `capacity` bytes: a caller writing many records of
        /// one shape passes the last one's length, so a record's text is not grown (and copied)
        /// five or six times on its way to a few hundred bytes.
        public init(capacity: Int) { bytes.reserveCapacity(capacity) }

        /// Goes on writing a fields object this writer finished (`finish()`): fields whose
        /// names sort after all of its fields. Nil when `text` is not an object's text.
        public init?(continuing text: String) {
            guard text.hasPrefix("{"), text.hasSuffix("}") else { return nil }
            bytes = Array(text.utf8.dropLast())
            first = bytes.count == 1
        }

        /// A field's opening, `"name":{"type":"T","value":`, made once and reused (a device
        /// makes one per property of an entity).
        public static func opening(name: String, type: String) -> Opening {
            var text = ""
            JSONWriter.appendString(name, to: &text)
            text += #":{"type":"#
            JSONWriter.appendString(type, to: &text)
            return Opening(name: name, bytes: Array((text + #","value":"#).utf8))
        }

        /// `opening(name:type:)`'s result: the field's name (the keys' order is checked in
        /// debug builds) and its text.
        public struct Opening: Sendable {
            public let name: String
            let bytes: [UInt8]
        }

        /// Starts a field: its value follows, then `close()`.
        public mutating func open(_ opening: Opening) {
            checkOrder(opening.name)
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes.append(contentsOf: opening.bytes)
        }

        /// A string value.
        public mutating func string(_ value: String) { JSONWriter.appendString(value, to: &bytes) }

        /// A string value already written as a JSON string (a value many records share, escaped
        /// once: `quoted(_:)`).
        public mutating func string(quoted: Quoted) { bytes.append(contentsOf: quoted.bytes) }

        /// An int64 value.
        public mutating func int64(_ value: Int64) { bytes.append(contentsOf: String(value).utf8) }

        /// A double or date value: whole numbers below 1e15 as integers.
        public mutating func double(_ value: Double) { append(.double(value)) }

        /// Ends a field opened with `open(_:)`.
        public mutating func close() { bytes.append(UInt8(ascii: "}")) }

        /// A whole field from a value (`{"type":…,"value":…}`, or anything a client sent).
        public mutating func field(_ name: String, _ field: JSONValue) {
            checkOrder(name)
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.appendString(name, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            append(field)
        }

        /// The fields object's text.
        public consuming func finish() -> String {
            bytes.append(UInt8(ascii: "}"))
            return String(decoding: bytes, as: UTF8.self)
        }

        /// A string as a JSON string, for `string(quoted:)`.
        public static func quoted(_ value: String) -> Quoted {
            var text = ""
            JSONWriter.appendString(value, to: &text)
            return Quoted(bytes: Array(text.utf8))
        }

        public struct Quoted: Sendable, Equatable {
            let bytes: [UInt8]
        }

        /// A value as `JSONWriter` writes it (whole doubles as integers).
        private mutating func append(_ value: JSONValue) {
            var text = ""
            JSONWriter.append(value, to: &text, integralDoubles: true)
            bytes.append(contentsOf: text.utf8)
        }

        private mutating func checkOrder(_ name: String) {
            #if DEBUG
            if let lastName { precondition(lastName < name, "fields out of order: \(name) after \(lastName)") }
            lastName = name
            #endif
        }
    }
}
