import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// Conversions between wire JSON and the SQLite storage form of attribute values.
///
/// Dates are stored as canonical UTC ISO-8601 text with milliseconds
/// (`2026-07-27T09:30:00.000Z`): it sorts correctly as text, so SQLite orders and compares dates
/// without conversion, and a fetch sends the stored text as is.
package enum AttributeCoding {
    /// The storage form of a wire value, validated as Core Data validates the property.
    package static func storageValue(_ value: JSONValue, for attribute: AttributeDescription, entity: String) throws -> SQLValue {
        let stored = try convert(value, for: attribute, entity: entity)
        try AttributeValidation.validate(stored, attribute: attribute, entity: entity)
        return stored
    }

    /// The storage form without the property's validation (a predicate's literal compares with
    /// stored values whatever the bounds).
    static func convert(_ value: JSONValue, for attribute: AttributeDescription, entity: String) throws -> SQLValue {
        func wrongType(_ expected: String) -> ServiceError {
            StoreError.invalidValue(entity: entity, property: attribute.name, "expected \(expected), got \(describe(value)).")
        }
        switch (attribute.type, value) {
        case (_, .null): return .null
        case let (.string, .string(text)):
            if let allowed = attribute.allowedValues, !allowed.contains(text) {
                throw StoreError.coreData(.validationStringPatternMatching, 1680,
                                          "\(entity).\(attribute.name): '\(text)' is not one of the allowed values: \(allowed.joined(separator: ", ")).",
                                          ["entity": .string(entity), "property": .string(attribute.name),
                                           "allowedValues": .array(allowed.map { .string($0) })])
            }
            return .text(text)
        case (.string, _): throw wrongType("a string")
        case let (.integer, .int(number)): return .integer(Int64(number))
        case let (.integer, .double(number)):
            guard number.rounded() == number, abs(number) < 9.0e15 else { throw wrongType("a whole number") }
            return .integer(Int64(number))
        case (.integer, .string):
            guard let number = AttributeTypeCoding.wholeNumber(value) else { throw wrongType("a whole number") }
            return .integer(number)
        case (.integer, _): throw wrongType("a whole number")
        case let (.double, .double(number)):
            // The cloud refuses it too (`FieldValueRules`): its sign would not survive storage or sync.
            guard !FieldValueRules.isNegativeZero(number) else { throw wrongType("a number other than -0.0 (send 0)") }
            return .real(number)
        case let (.double, .int(number)): return .real(Double(number))
        case (.double, _): throw wrongType("a number")
        case let (.boolean, .bool(flag)): return .integer(flag ? 1 : 0)
        case (.boolean, _): throw wrongType("true or false")
        case let (.date, .string(text)):
            guard let canonical = canonicalDate(text) else {
                throw wrongType("an ISO-8601 date such as \"2026-07-27T09:30:00Z\"")
            }
            guard isInCloudRange(canonical) else { throw wrongType("a date in \(FieldValueRules.dateRangeText)") }
            return .text(canonical)
        case (.date, _): throw wrongType("an ISO-8601 date string")
        default: return try AttributeTypeCoding.storageValue(value, for: attribute, entity: entity)
        }
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case let .bool(flag): return "the boolean \(flag)"
        case let .int(number): return "the number \(number)"
        case let .double(number): return "the number \(number)"
        case let .string(text): return "the string \"\(text.prefix(40))\""
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)` → canonical UTC text with milliseconds, or nil.
    package static func canonicalDate(_ text: String) -> String? {
        // Already canonical (what fetches return and most clients echo back): no copies at all.
        if text.utf8.count == 24, let canonical = text.utf8.withContiguousStorageIfAvailable({ bytes in
            bytes[19] == UInt8(ascii: ".") && bytes[23] == UInt8(ascii: "Z") && (20...22).allSatisfy { isDigit(bytes[$0]) }
                && isBasicShape(UnsafeBufferPointer(rebasing: bytes[0..<19]))
        }), canonical {
            return text
        }
        let bytes = Array(text.utf8)
        if bytes.count >= 20, bytes.count <= 30, bytes.last == UInt8(ascii: "Z"), isBasicShape(bytes) {
            // Fast path: already UTC; only the fraction needs normalising to 3 digits.
            var out = Array(bytes[0..<19])
            var fraction: [UInt8] = []
            if bytes.count > 20 {
                guard bytes[19] == UInt8(ascii: "."), bytes.count > 21 else { return nil }
                fraction = Array(bytes[20..<(bytes.count - 1)])
                guard fraction.allSatisfy(isDigit) else { return nil }
            } else if bytes[19] != UInt8(ascii: "Z") {
                return nil
            }
            fraction = Array((fraction + [48, 48, 48]).prefix(3))
            out.append(UInt8(ascii: "."))
            out += fraction
            out.append(UInt8(ascii: "Z"))
            return String(decoding: out, as: UTF8.self)
        }
        let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let plain = Date.ISO8601FormatStyle()
        guard let date = (try? withFraction.parse(text)) ?? (try? plain.parse(text)) else { return nil }
        return withFraction.format(date)
    }

    /// Whether a canonical date lies in the years a cloud record's date may hold
    /// (`FieldValueRules`): four digits from 0001, the form every such date is written in.
    static func isInCloudRange(_ canonical: String) -> Bool {
        let utf8 = canonical.utf8
        guard utf8.count == 24 else { return false }
        var index = utf8.startIndex
        var year = 0
        for _ in 0..<4 {
            guard isDigit(utf8[index]) else { return false }
            year = year * 10 + Int(utf8[index] - 48)
            index = utf8.index(after: index)
        }
        return year >= 1 && utf8[index] == 45
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    private static func isBasicShape(_ b: [UInt8]) -> Bool {
        b.withUnsafeBufferPointer { isBasicShape($0) }
    }

    private static func isBasicShape(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard b.count >= 19 else { return false }
        for index in [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18] where !isDigit(b[index]) { return false }
        guard b[4] == 45, b[7] == 45, b[10] == UInt8(ascii: "T"), b[13] == 58, b[16] == 58 else { return false }
        let month = Int(b[5] - 48) * 10 + Int(b[6] - 48)
        let day = Int(b[8] - 48) * 10 + Int(b[9] - 48)
        let hour = Int(b[11] - 48) * 10 + Int(b[12] - 48)
        let minute = Int(b[14] - 48) * 10 + Int(b[15] - 48)
        let second = Int(b[17] - 48) * 10 + Int(b[18] - 48)
        return (1...12).contains(month) && (1...31).contains(day) && hour < 24 && minute < 60 && second < 61
    }

    /// The wire form of a stored attribute value.
    static func jsonValue(_ value: SQLValue, type: AttributeType) -> JSONValue {
        if let special = AttributeTypeCoding.jsonValue(value, type: type) { return special }
        switch (type, value) {
        case (_, .null): return .null
        case let (.boolean, .integer(flag)): return .bool(flag != 0)
        case let (.integer, .integer(number)): return .int(Int(number))
        case let (.double, number): return number.double.map { .double($0) } ?? .null
        case let (_, .text(text)): return .string(text)
        case let (_, .integer(number)): return .int(Int(number))
        case let (_, .real(number)): return .double(number)
        case let (_, .blob(bytes)): return .string(String(decoding: bytes, as: UTF8.self))
        }
    }
}
