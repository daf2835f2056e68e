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
        try storageValue(value, for: AttributeRule(attribute), entity: entity)
    }

    package static func storageValue(_ value: JSONValue, for rule: AttributeRule, entity: String) throws -> SQLValue {
        let stored = try convert(value, for: rule, entity: entity)
        try AttributeValidation.validate(stored, rule: rule, entity: entity)
        return stored
    }

    /// The storage form without the property's validation (a predicate's literal compares with
    /// stored values whatever the bounds).
    static func convert(_ value: JSONValue, for attribute: AttributeDescription, entity: String) throws -> SQLValue {
        try convert(value, for: AttributeRule(attribute), entity: entity)
    }

    static func convert(_ value: JSONValue, for rule: AttributeRule, entity: String) throws -> SQLValue {
        func wrongType(_ expected: String) -> ServiceError {
            StoreError.invalidValue(entity: entity, property: rule.name, "expected \(expected), got \(describe(value)).")
        }
        switch (rule.type, value) {
        case (_, .null): return .null
        case let (.string, .string(text)):
            if let allowed = rule.attribute.allowedValues, !allowed.contains(text) {
                throw StoreError.coreData(.validationStringPatternMatching, 1680,
                                          "\(entity).\(rule.name): '\(text)' is not one of the allowed values: \(allowed.joined(separator: ", ")).",
                                          ["entity": .string(entity), "property": .string(rule.name),
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
            return .real(FieldValueRules.storedReal(number))
        case let (.double, .int(number)): return .real(Double(number))
        case (.double, _): throw wrongType("a number")
        case let (.boolean, .bool(flag)): return .integer(flag ? 1 : 0)
        case (.boolean, _): throw wrongType("true or false")
        case let (.date, .string(text)):
            guard let canonical = canonicalDate(text) else {
                guard ISOTime.instant(text) == nil else { throw wrongType("a date in \(FieldValueRules.dateRangeText)") }
                throw wrongType("an ISO-8601 date such as \"2026-07-27T09:30:00Z\" or \"2026-07-27T11:30:00.250+02:00\"")
            }
            guard isInCloudRange(canonical) else { throw wrongType("a date in \(FieldValueRules.dateRangeText)") }
            return .text(canonical)
        case (.date, _): throw wrongType("an ISO-8601 date string")
        default: return try AttributeTypeCoding.storageValue(value, for: rule, entity: entity)
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

    /// `YYYY-MM-DDTHH:MM:SS[.f…](Z|±HH:MM)` (`ISOTime`'s shape) → canonical UTC text with
    /// milliseconds, or nil (also for an instant outside the years 0000–9999 once in UTC). The
    /// instant is exact; fraction digits past the millisecond are dropped, toward the past.
    package static func canonicalDate(_ text: String) -> String? {
        guard let instant = ISOTime.instant(text) else { return nil }
        // The only 24-character shape ending in Z is the canonical one: no copy for it.
        if text.utf8.count == 24, text.utf8.last == UInt8(ascii: "Z") { return text }
        let canonical = ISOTime.string(instant)
        return canonical.isEmpty ? nil : canonical
    }

    /// Whether a canonical date lies in the years a cloud record's date may hold
    /// (`FieldValueRules`): four digits from 0001, the form every such date is written in.
    static func isInCloudRange(_ canonical: String) -> Bool {
        var canonical = canonical
        return canonical.withUTF8 { utf8 in
            guard utf8.count == 24 else { return false }
            var year = 0
            for index in 0..<4 {
                guard isDigit(utf8[index]) else { return false }
                year = year * 10 + Int(utf8[index] - 48)
            }
            return year >= 1 && utf8[4] == 45
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

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
