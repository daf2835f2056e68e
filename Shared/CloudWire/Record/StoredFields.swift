#if canImport(Glibc)
import Glibc
#endif
import MeowWire

/// Record fields in the sync-service's stored form: the exact text their one writer
/// (`RecordFields`) makes, keys in byte order without escapes, no whitespace, every field
/// `{"type":…,"value":…}` of a string, bytes, int64, double or date type with its value as the
/// writer writes it.
///
/// Both services meet fields in this form by the thousand: the sync-service stores a save's
/// fields as they came when they are in it, and a device keeps a fetched record's fields as the
/// text it received. Neither needs a JSON tree of them (a dictionary per field was most of a
/// change page's parse): `end` lets `JSONParser` keep such a value as text alone, and `fields`
/// reads the values out of the text in one pass. Conservative: anything else (references,
/// lists, other number forms, other escapes) is not stored form, and callers parse it as JSON.
public enum StoredFields {
    /// One field: its name, its type, and its value as `JSONParser` would give it.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var type: String
        public var value: JSONValue

        public init(name: String, type: String, value: JSONValue) {
            self.name = name
            self.type = type
            self.value = value
        }
    }

    /// Where a fields object in stored form that starts at `start` ends (the index after its
    /// closing brace), or nil when what starts there is not one. What it accepts is well-formed
    /// JSON: the parser may keep such fields as text without a tree.
    public static func end(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var scanner = StoredFormScanner(bytes: bytes, index: start)
        return scanner.fields() ? scanner.index : nil
    }

    /// Whether `text` is exactly one fields object in stored form.
    public static func isStoredForm(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in end(bytes, from: 0) == bytes.count }
    }

    /// The fields of `text`, in key order, when it is one fields object in stored form (nil
    /// otherwise): what `JSONParser.parse(text)` gives as `name: {"type", "value"}`, without
    /// a dictionary per field.
    public static func fields(_ text: String) -> [Field]? {
        scanned(text) { bytes, found in fields(bytes, found) }
    }

    /// `end` and the `fields` of the object from the one scan (a fetched page's records are
    /// scanned once where the reply is read, not again to read their values).
    public static func endAndFields(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (end: Int, fields: [Field])? {
        scannedFrom(bytes, start, fields).map { (end: $0.end, fields: $0.value) }
    }

    /// `body` over the byte ranges of each field of the fields object that starts at `start`,
    /// with the index just past it (nil when what starts there is not one in stored form).
    private static func scannedFrom<T>(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int,
                                       _ body: (UnsafeBufferPointer<UInt8>, [(name: Range<Int>, type: Range<Int>, value: Range<Int>)]) -> T) -> (end: Int, value: T)? {
        var scanner = StoredFormScanner(bytes: bytes, index: start)
        scanner.keepFound()
        guard scanner.fields(), let found = scanner.found else { return nil }
        return (scanner.index, body(bytes, found))
    }

    private static func fields(_ bytes: UnsafeBufferPointer<UInt8>, _ found: [(name: Range<Int>, type: Range<Int>, value: Range<Int>)]) -> [Field] {
        found.map { name, type, value in
            Field(name: String(decoding: UnsafeBufferPointer(rebasing: bytes[name]), as: UTF8.self),
                  type: String(decoding: UnsafeBufferPointer(rebasing: bytes[type]), as: UTF8.self),
                  value: self.value(UnsafeBufferPointer(rebasing: bytes[value])))
        }
    }

    /// Each field's name and type as one run of bytes (`name 0 type 0 …`), when `text` is one
    /// fields object in stored form: two records whose runs are equal give their fields the same
    /// types (a batch's records mostly do, and comparing bytes is cheaper than a string each).
    public static func typeSignature(_ text: String) -> [UInt8]? {
        scanned(text) { bytes, found in signature(bytes, found) }
    }

    /// The names of the fields whose type or value differs between two fields objects in stored
    /// form, in key order (a field only one has counts); nil when either is not in stored form.
    /// Stored form has one spelling per value, so equal text is equal value.
    public static func changedNames(from before: String, to after: String) -> [String]? {
        guard let old = scanned(before, entries), let new = scanned(after, entries) else { return nil }
        var changed: [String] = []
        var i = 0, j = 0
        while i < old.count || j < new.count {
            if j == new.count || (i < old.count && old[i].name.lexicographicallyPrecedes(new[j].name)) {
                changed.append(String(decoding: old[i].name, as: UTF8.self))
                i += 1
            } else if i == old.count || new[j].name.lexicographicallyPrecedes(old[i].name) {
                changed.append(String(decoding: new[j].name, as: UTF8.self))
                j += 1
            } else {
                if old[i].typeAndValue != new[j].typeAndValue { changed.append(String(decoding: new[j].name, as: UTF8.self)) }
                i += 1
                j += 1
            }
        }
        return changed
    }

    private static func entries(_ bytes: UnsafeBufferPointer<UInt8>, _ found: [(name: Range<Int>, type: Range<Int>, value: Range<Int>)]) -> [(name: [UInt8], typeAndValue: [UInt8])] {
        found.map { name, type, value in (Array(bytes[name]), Array(bytes[type]) + [0] + Array(bytes[value])) }
    }

    /// A request's fields object that is in stored form but for the order of its members (JSON
    /// gives members none, and a client may send them in any): where it ends, its stored-form
    /// text when the members had to be sorted into it (nil: the text as it came is stored form),
    /// and its `typeSignature`, from one scan. Nil when a name repeats or anything else is not
    /// stored form (such fields are parsed as JSON). Each member's text is stored form already,
    /// so sorting them gives the text `RecordFields` writes for the same fields, without a tree.
    public static func sortedStoredForm(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (end: Int, sorted: String?, signature: [UInt8])? {
        var scanner = StoredFormScanner(bytes: bytes, index: start)
        scanner.keepFound()
        scanner.anyOrder = true
        guard scanner.fields(), var found = scanner.found else { return nil }
        let inOrder = zip(found, found.dropFirst()).allSatisfy { StoredFormScanner.less(bytes[$0.name], bytes[$1.name]) }
        guard !inOrder else { return (scanner.index, nil, signature(bytes, found)) }
        found.sort { StoredFormScanner.less(bytes[$0.name], bytes[$1.name]) }
        guard zip(found, found.dropFirst()).allSatisfy({ StoredFormScanner.less(bytes[$0.name], bytes[$1.name]) }) else { return nil }
        var text: [UInt8] = []
        text.reserveCapacity(scanner.index - start)
        text.append(UInt8(ascii: "{"))
        for (position, field) in found.enumerated() {
            if position > 0 { text.append(UInt8(ascii: ",")) }
            // `"name":{"type":…,"value":…}`: from the name's opening quote to the brace after the value.
            text.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[(field.name.lowerBound - 1)...field.value.upperBound]))
        }
        text.append(UInt8(ascii: "}"))
        return (scanner.index, String(decoding: text, as: UTF8.self), signature(bytes, found))
    }

    private static func signature(_ bytes: UnsafeBufferPointer<UInt8>, _ found: [(name: Range<Int>, type: Range<Int>, value: Range<Int>)]) -> [UInt8] {
        var signature: [UInt8] = []
        signature.reserveCapacity(found.count * 24)
        for (name, type, _) in found {
            // Appended as buffers (one copy each), not as slices (a generic walk of each byte).
            signature.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[name]))
            signature.append(0)
            signature.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[type]))
            signature.append(0)
        }
        return signature
    }

    /// `body` over the byte ranges of each field's name, type and value, when `text` is one
    /// fields object in stored form (nil otherwise).
    private static func scanned<T>(_ text: String,
                                   _ body: (UnsafeBufferPointer<UInt8>, [(name: Range<Int>, type: Range<Int>, value: Range<Int>)]) -> T) -> T? {
        var text = text
        return text.withUTF8 { bytes -> T? in
            var scanner = StoredFormScanner(bytes: bytes, index: 0)
            scanner.keepFound()
            guard scanner.fields(), scanner.index == bytes.count, let found = scanner.found else { return nil }
            return body(bytes, found)
        }
    }

    /// A value the scanner accepted: a canonical string, or a number in the writer's form.
    private static func value(_ text: UnsafeBufferPointer<UInt8>) -> JSONValue {
        guard text.first == UInt8(ascii: "\"") else {
            let number = String(decoding: text, as: UTF8.self)
            // Integers (at most 18 digits) fit an Int, as JSONParser reads them; anything
            // with a fraction or an exponent is a Double.
            if let integer = Int(number) { return .int(integer) }
            return .double(Double(number) ?? 0)
        }
        let contents = UnsafeBufferPointer(rebasing: text[1..<(text.count - 1)])
        guard contents.contains(UInt8(ascii: "\\")) else { return .string(String(decoding: contents, as: UTF8.self)) }
        var out: [UInt8] = []
        out.reserveCapacity(contents.count)
        var index = 0
        while index < contents.count {
            let byte = contents[index]
            index += 1
            guard byte == UInt8(ascii: "\\") else { out.append(byte); continue }
            let escaped = contents[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                // `\u00xx` with lowercase hex, a control character (the scanner checked it).
                out.append(hexValue(contents[index + 2]) << 4 | hexValue(contents[index + 3]))
                index += 4
            default: out.append(escaped)
            }
        }
        return .string(String(decoding: out, as: UTF8.self))
    }

    private static func hexValue(_ digit: UInt8) -> UInt8 {
        digit >= UInt8(ascii: "a") ? digit - UInt8(ascii: "a") + 10 : digit - UInt8(ascii: "0")
    }
}

/// The scanner behind `StoredFields`: one pass, no allocations but a number's text (and the
/// ranges of what it found, when asked to keep them).
// Not JSONScanner: it accepts one canonical spelling (no whitespace, sorted keys, the writer's escapes and numbers), where JSON allows many.
struct StoredFormScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index: Int
    /// When not nil, each field's name, type and value (its JSON text) as byte ranges.
    var found: [(name: Range<Int>, type: Range<Int>, value: Range<Int>)]?
    /// Whether members may come in any order (the caller sorts `found` and checks for repeats).
    var anyOrder = false

    init(bytes: UnsafeBufferPointer<UInt8>, index: Int) {
        self.bytes = bytes
        self.index = index
    }

    /// Keeps what the scan finds in `found`, with room for a record's usual fields made at once
    /// (grown one field at a time, the array was reallocated four times for a record of eight).
    mutating func keepFound() {
        var found: [(name: Range<Int>, type: Range<Int>, value: Range<Int>)] = []
        found.reserveCapacity(16)
        self.found = found
    }

    /// One fields object from `index`; leaves `index` after its closing brace.
    mutating func fields() -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        var previous: Range<Int>?
        while true {
            guard let key = plainString() else { return false }
            // Strictly ascending keys: sorted, no duplicates (plain ASCII compares bytewise as
            // Swift orders strings).
            if !anyOrder, let previous, !Self.less(bytes[previous], bytes[key]) { return false }
            previous = key
            guard take(UInt8(ascii: ":")), field(named: key) else { return false }
            if take(UInt8(ascii: "}")) { return true }
            guard take(UInt8(ascii: ",")) else { return false }
        }
    }

    private mutating func field(named key: Range<Int>) -> Bool {
        guard literal(#"{"type":"#), let type = plainString(), literal(#","value":"#) else { return false }
        let start = index
        let valid: Bool
        if isType(type, "string") {
            valid = canonicalString()
        } else if isType(type, "bytes") || isType(type, "asset") {
            valid = base64String()
        } else if isType(type, "int64") {
            valid = integer(maxDigits: 18)
        } else if isType(type, "double") {
            valid = double() != nil
        } else if isType(type, "date") {
            valid = double().map(FieldValueRules.isDateInRange) ?? false
        } else {
            valid = false
        }
        if valid, found != nil { found?.append((key, type, start..<index)) }
        return valid && take(UInt8(ascii: "}"))
    }

    /// Whether the bytes in `range` are `name` (compared as bytes: it runs once per field
    /// of every record read, where a walk over a string's UTF-8 view costs more).
    private func isType(_ range: Range<Int>, _ name: StaticString) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        return memcmp(bytes.baseAddress! + range.lowerBound, name.utf8Start, range.count) == 0
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        guard bytes.starts(with: text, at: index) else { return false }
        index += text.utf8CodeUnitCount
        return true
    }

    /// A string of printable ASCII without escapes; its contents' range.
    private mutating func plainString() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { index += 1; return start..<(index - 1) }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// A base64 string (`FieldValueRules.isBase64`): its characters never need escaping.
    private mutating func base64String() -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") { index += 1 }
        guard index < bytes.count else { return false }
        let contents = UnsafeBufferPointer(rebasing: bytes[start..<index])
        index += 1
        return FieldValueRules.isBase64(contents)
    }

    /// A string escaped as `RecordFields` (`JSONWriter.appendString`) escapes it: `\"`, `\\`,
    /// `\n`, `\r`, `\t`, other control characters as lowercase `\u00xx`, everything else as it is.
    private mutating func canonicalString() -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return true
            case 0..<0x20: return false
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return false }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"): continue
                case UInt8(ascii: "u"):
                    guard bytes.count - index >= 4, bytes[index] == UInt8(ascii: "0"), bytes[index + 1] == UInt8(ascii: "0"),
                          let high = Self.lowerHex(bytes[index + 2]), let low = Self.lowerHex(bytes[index + 3]) else { return false }
                    let code = high << 4 | low
                    guard code < 0x20, code != 0x09, code != 0x0A, code != 0x0D else { return false }
                    index += 4
                default: return false
                }
            case 0x80...:
                // Multi-byte UTF-8, checked as the parser checks it: the text is kept as it
                // came, so it must be what a parse would accept.
                index -= 1
                guard validUTF8Sequence() else { return false }
            default: continue
            }
        }
        return false
    }

    /// One well-formed UTF-8 sequence of two to four bytes at `index` (no overlong forms, no
    /// surrogates, nothing past U+10FFFF); advances past it.
    private mutating func validUTF8Sequence() -> Bool {
        let lead = bytes[index]
        let count: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: count = 2
        case 0xE0: count = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 3
        case 0xED: count = 3; high = 0x9F
        case 0xF0: count = 4; low = 0x90
        case 0xF1...0xF3: count = 4
        case 0xF4: count = 4; high = 0x8F
        default: return false
        }
        guard bytes.count - index >= count else { return false }
        let second = bytes[index + 1]
        guard second >= low, second <= high else { return false }
        for offset in 2..<max(2, count) where bytes[index + offset] < 0x80 || bytes[index + offset] > 0xBF { return false }
        index += count
        return true
    }

    /// `-?(0|[1-9][0-9]*)` with at most `maxDigits` digits, not `-0`: what an integer is written as.
    private mutating func integer(maxDigits: Int) -> Bool {
        let negative = take(UInt8(ascii: "-"))
        let start = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        let digits = index - start
        guard digits >= 1, digits <= maxDigits else { return false }
        if bytes[start] == UInt8(ascii: "0") { return digits == 1 && !negative }
        return true
    }

    /// A double as `RecordFields` writes it: a whole number below 1e15 as an integer, any
    /// other finite number as Swift's shortest text for it. Its value, or nil when it is not one.
    private mutating func double() -> Double? {
        let start = index
        var end = index
        while end < bytes.count, Self.isNumberByte(bytes[end]) { end += 1 }
        let token = bytes[start..<end]
        guard !token.isEmpty else { return nil }
        if !token.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") || $0 == UInt8(ascii: "+") }) {
            guard integer(maxDigits: 15), index == end else { return nil }
            var value = 0
            for byte in token where byte != UInt8(ascii: "-") { value = value * 10 + Int(byte - UInt8(ascii: "0")) }
            return Double(token.first == UInt8(ascii: "-") ? -value : value)
        }
        let text = String(decoding: token, as: UTF8.self)
        guard let number = Double(text), number.isFinite, !(number.rounded() == number && abs(number) < 1e15),
              number.description == text else { return nil }
        index = end
        return number
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    private static func lowerHex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    static func less(_ a: Slice<UnsafeBufferPointer<UInt8>>, _ b: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        a.lexicographicallyPrecedes(b)
    }
}
