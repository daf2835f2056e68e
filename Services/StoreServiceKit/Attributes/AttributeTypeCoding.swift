import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// Wire and storage forms of the attribute types beyond MeowCare's five (`AttributeCoding`
/// keeps those). Every form is exact, so a value round-trips through stores and records:
///
/// - Integer 16/32/64: a JSON integer; Integer 64 also reads a string of decimal digits, and
///   replies write a value past ±2^53 as such a string (JSON readers that hold numbers as
///   doubles would round it). SQLite INTEGER.
/// - Float: a JSON number, kept as the nearest Float (Core Data's 32-bit float). SQLite REAL.
/// - Decimal: a string of decimal text ("12.50"; a JSON integer is accepted), kept as the
///   canonical text of Foundation's Decimal ("12.5"). SQLite TEXT.
/// - Binary Data and Transformable: base64 text (RFC 4648). SQLite BLOB.
/// - UUID: its text, kept upper-case ("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"). SQLite TEXT.
/// - URI: an absolute URI's text (it has a scheme). SQLite TEXT.
enum AttributeTypeCoding {
    /// 2^53: past it a double, and so many JSON readers, no longer holds every integer.
    static let exactDoubleLimit: Int64 = 1 << 53

    static func storageValue(_ value: JSONValue, for rule: AttributeRule, entity: String) throws -> SQLValue {
        func wrongType(_ expected: String) -> ServiceError {
            StoreError.invalidValue(entity: entity, property: rule.name, "expected \(expected), got \(AttributeCoding.describe(value)).")
        }
        switch rule.type {
        case .integer16, .integer32:
            guard let number = wholeNumber(value) else { throw wrongType("a whole number") }
            return .integer(number)
        case .float:
            guard let number = value.doubleValue else { throw wrongType("a number") }
            guard abs(number) <= Double(Float.greatestFiniteMagnitude) else {
                throw AttributeValidation.bound(number > 0 ? .above : .below, entity: entity, property: rule.name,
                                                "\(number) is outside a Float's range (±\(Float.greatestFiniteMagnitude)).")
            }
            return .real(FieldValueRules.storedReal(Double(Float(number))))
        case .decimal:
            guard let decimal = decimal(value) else { throw wrongType("decimal text such as \"12.50\"") }
            return .text(decimal.description)
        case .binary, .transformable:
            guard let text = value.stringValue, let bytes = Base64Text.bytes(text) else { throw wrongType("base64 text") }
            return .blob(bytes)
        case .uuid:
            guard let text = value.stringValue, let uuid = canonicalUUID(text) else {
                throw wrongType("a UUID such as \"E621E1F8-C36C-495A-93FC-0C247A3E6E5F\"")
            }
            return .text(uuid)
        case .uri:
            guard let text = value.stringValue, isAbsoluteURI(text) else { throw wrongType("an absolute URI such as \"https://example.com/a\"") }
            return .text(text)
        case .string, .integer, .double, .boolean, .date:
            throw wrongType("a \(rule.type.rawValue)")
        }
    }

    /// A UUID's text upper-case (`UUID(uuidString:)`'s reading), or nil. Text already in that
    /// form, as clients mostly send it, is kept as it is rather than parsed and written anew.
    static func canonicalUUID(_ text: String) -> String? {
        var bytes = text
        let isCanonical = bytes.withUTF8 { utf8 in
            guard utf8.count == 36 else { return false }
            for index in 0..<36 {
                let byte = utf8[index]
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return false }
                } else {
                    guard isDigit(byte) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F")) else { return false }
                }
            }
            return true
        }
        if isCanonical { return text }
        return UUID(uuidString: text)?.uuidString
    }

    /// An Integer 64 value: a JSON integer, a whole double below 2^53, or decimal digits as text.
    static func wholeNumber(_ value: JSONValue) -> Int64? {
        switch value {
        case let .int(number): return Int64(number)
        case let .double(number) where number.rounded() == number && abs(number) < Double(exactDoubleLimit): return Int64(number)
        case let .string(text):
            var bytes = text
            return bytes.withUTF8(wholeNumber)
        default: return nil
        }
    }

    /// `-?digits` of at most 20 bytes whose value fits 64 bits, or nil.
    static func wholeNumber(_ utf8: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard utf8.count <= 20 else { return nil }
        let negative = utf8.first == UInt8(ascii: "-")
        let digits = negative ? 1 : 0
        guard utf8.count > digits else { return nil }
        // Counted below zero, where Int64 reaches one further than above it.
        var number: Int64 = 0
        for byte in utf8[digits...] {
            guard isDigit(byte) else { return nil }
            let (tens, overflowTens) = number.multipliedReportingOverflow(by: 10)
            let (next, overflow) = tens.subtractingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
            guard !overflowTens, !overflow else { return nil }
            number = next
        }
        if negative { return number }
        return number == .min ? nil : -number
    }

    static func decimal(_ value: JSONValue) -> Decimal? {
        switch value {
        case let .int(number): return Decimal(number)
        case let .string(text):
            // Plain decimal text only: Decimal(string:) also reads a prefix and stops, which would
            // keep part of a malformed value.
            guard isDecimalText(text) else { return nil }
            return Decimal(string: text)
        default: return nil
        }
    }

    /// `-?digits(.digits)?([eE][+-]?digits)?`, at most 38 significant digits (Decimal's precision).
    static func isDecimalText(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let mantissa = bytes.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
        let parts = mantissa.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isDigit) }) else { return false }
        guard parts.reduce(0, { $0 + $1.count }) <= 38 else { return false }
        var exponent = bytes.dropFirst(mantissa.count)
        guard !exponent.isEmpty else { return true }
        exponent = exponent.dropFirst()
        if exponent.first == UInt8(ascii: "+") || exponent.first == UInt8(ascii: "-") { exponent = exponent.dropFirst() }
        return !exponent.isEmpty && exponent.count <= 3 && exponent.allSatisfy(isDigit)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    /// RFC 3986's scheme (a letter, then letters, digits, +, - or .) followed by a colon, and no
    /// white space anywhere.
    static func isAbsoluteURI(_ text: String) -> Bool {
        var bytes = text
        return bytes.withUTF8(isAbsoluteASCIIURI) ?? isAbsoluteURI(characters: text)
    }

    /// The same test on bytes when the text is ASCII (Unicode's white space in ASCII is tab to
    /// carriage return and space); nil when it is not, for the test on characters.
    private static func isAbsoluteASCIIURI(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool? {
        var sawScheme = false
        var inScheme = true
        // A refused text is still read to its end: a non-ASCII byte anywhere hands it to the
        // test on characters.
        var refused = false
        for byte in utf8 {
            if byte >= 0x80 { return nil }
            if refused { continue }
            if byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) {
                refused = true
                continue
            }
            guard inScheme else { continue }
            if byte == UInt8(ascii: ":") {
                if sawScheme { inScheme = false } else { refused = true }
                continue
            }
            let isLetter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let isSchemeByte = isLetter || (sawScheme && (isDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")))
            if isSchemeByte { sawScheme = true } else { refused = true }
        }
        return !refused && !inScheme
    }

    private static func isAbsoluteURI(characters text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, !text.contains(where: \.isWhitespace) else { return false }
        let scheme = text[..<colon]
        return scheme.first!.isASCII && scheme.first!.isLetter
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }

    /// The wire form of a stored value of one of these types; nil for the other types.
    static func jsonValue(_ value: SQLValue, type: AttributeType) -> JSONValue? {
        switch (type, value) {
        case (_, .null): return .null
        case let (.integer, .integer(number)), let (.integer16, .integer(number)), let (.integer32, .integer(number)):
            return number > exactDoubleLimit || number < -exactDoubleLimit ? .string(String(number)) : .int(Int(number))
        case let (.float, number): return number.double.map { .double($0) } ?? .null
        case let (.binary, .blob(bytes)), let (.transformable, .blob(bytes)): return .string(Data(bytes).base64EncodedString())
        case (.decimal, _), (.uuid, _), (.uri, _), (.binary, _), (.transformable, _), (.integer16, _), (.integer32, _):
            return value.string.map { .string($0) } ?? value.int64.map { .int(Int($0)) }
        default: return nil
        }
    }
}
