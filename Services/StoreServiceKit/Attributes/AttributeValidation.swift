import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import Synchronization

extension ErrorCode {
    /// NSValidationNumberTooLargeError 1610.
    public static let validationNumberTooLarge: ErrorCode = "validationNumberTooLarge"
    /// NSValidationNumberTooSmallError 1620.
    public static let validationNumberTooSmall: ErrorCode = "validationNumberTooSmall"
    /// NSValidationDateTooLateError 1630.
    public static let validationDateTooLate: ErrorCode = "validationDateTooLate"
    /// NSValidationDateTooSoonError 1640.
    public static let validationDateTooSoon: ErrorCode = "validationDateTooSoon"
    /// NSValidationStringTooLongError 1660.
    public static let validationStringTooLong: ErrorCode = "validationStringTooLong"
    /// NSValidationStringTooShortError 1670.
    public static let validationStringTooShort: ErrorCode = "validationStringTooShort"
    /// NSValidationRelationshipLacksMinimumCountError 1580.
    public static let validationRelationshipLacksMinimumCount: ErrorCode = "validationRelationshipLacksMinimumCount"
    /// NSValidationRelationshipExceedsMaximumCountError 1590.
    public static let validationRelationshipExceedsMaximumCount: ErrorCode = "validationRelationshipExceedsMaximumCount"
}

/// Core Data's property validation of a value already in storage form: an integer type's
/// range, numbers' and dates' bounds, strings' lengths (in UTF-16 units, NSString's length)
/// and pattern. Each failure is Core Data's error, naming the entity and the property.
enum AttributeValidation {
    enum Side { case above, below }

    static func validate(_ value: SQLValue, rule: AttributeRule, entity: String) throws {
        if value.isNull { return }
        if let range = rule.integerRange, let number = value.int64 {
            if number > range.upperBound { throw bound(.above, entity: entity, property: rule.name, "\(number) is more than \(rule.type.rawValue)'s largest value, \(range.upperBound).") }
            if number < range.lowerBound { throw bound(.below, entity: entity, property: rule.name, "\(number) is less than \(rule.type.rawValue)'s smallest value, \(range.lowerBound).") }
        }
        guard rule.hasConstraints else { return }
        let attribute = rule.attribute
        let constraints = attribute.constraints
        switch attribute.type {
        case .integer, .integer16, .integer32, .double, .float:
            guard let number = value.double else { return }
            if let maximum = constraints.maxValue?.doubleValue, number > maximum {
                throw bound(.above, entity: entity, property: attribute.name, "\(text(value)) is more than the maximum, \(JSONWriter.text(constraints.maxValue!)).")
            }
            if let minimum = constraints.minValue?.doubleValue, number < minimum {
                throw bound(.below, entity: entity, property: attribute.name, "\(text(value)) is less than the minimum, \(JSONWriter.text(constraints.minValue!)).")
            }
        case .decimal:
            guard let number = value.string.flatMap({ Decimal(string: $0) }) else { return }
            if let maximum = constraints.maxValue.flatMap(AttributeTypeCoding.decimal), number > maximum {
                throw bound(.above, entity: entity, property: attribute.name, "\(number) is more than the maximum, \(maximum).")
            }
            if let minimum = constraints.minValue.flatMap(AttributeTypeCoding.decimal), number < minimum {
                throw bound(.below, entity: entity, property: attribute.name, "\(number) is less than the minimum, \(minimum).")
            }
        case .date:
            // Canonical ISO text sorts as the dates do.
            guard let date = value.string else { return }
            if let latest = constraints.maxValue?.stringValue.flatMap(AttributeCoding.canonicalDate), date > latest {
                throw StoreError.coreData(.validationDateTooLate, 1630, "\(entity).\(attribute.name): \(date) is later than the latest date, \(latest).",
                                          details(entity, attribute, ["maxValue": .string(latest)]))
            }
            if let earliest = constraints.minValue?.stringValue.flatMap(AttributeCoding.canonicalDate), date < earliest {
                throw StoreError.coreData(.validationDateTooSoon, 1640, "\(entity).\(attribute.name): \(date) is earlier than the earliest date, \(earliest).",
                                          details(entity, attribute, ["minValue": .string(earliest)]))
            }
        case .string, .uri:
            guard let string = value.string else { return }
            try validate(string: string, constraints, attribute: attribute, entity: entity)
        case .boolean, .binary, .transformable, .uuid:
            return
        }
    }

    private static func validate(string: String, _ constraints: AttributeConstraints, attribute: AttributeDescription, entity: String) throws {
        let length = string.utf16.count
        if let maximum = constraints.maxLength, length > maximum {
            throw StoreError.coreData(.validationStringTooLong, 1660, "\(entity).\(attribute.name): the string has \(length) characters; at most \(maximum) are allowed.",
                                      details(entity, attribute, ["length": .int(length), "maxLength": .int(maximum)]))
        }
        if let minimum = constraints.minLength, length < minimum {
            throw StoreError.coreData(.validationStringTooShort, 1670, "\(entity).\(attribute.name): the string has \(length) characters; at least \(minimum) are needed.",
                                      details(entity, attribute, ["length": .int(length), "minLength": .int(minimum)]))
        }
        if let pattern = constraints.regularExpression, !matches(string, pattern: pattern) {
            throw StoreError.coreData(.validationStringPatternMatching, 1680,
                                      "\(entity).\(attribute.name): '\(string.prefix(60))' does not match the pattern \(pattern).",
                                      details(entity, attribute, ["regularExpression": .string(pattern)]))
        }
    }

    /// The model's patterns, each compiled once (patterns come from the model, so few).
    private static let compiled = Mutex<[String: Regex<AnyRegexOutput>]>([:])

    /// Core Data matches the whole string (NSPredicate's MATCHES); a pattern that does not
    /// compile matches nothing (the model check refuses such a pattern first).
    static func matches(_ string: String, pattern: String) -> Bool {
        compiled.withLock { cache in
            if cache[pattern] == nil {
                guard let regex = try? Regex(pattern) else { return false }
                cache[pattern] = regex
            }
            return (try? cache[pattern]?.wholeMatch(in: string)) != nil
        }
    }

    static func compiles(_ pattern: String) -> Bool { (try? Regex(pattern)) != nil }

    static func bound(_ side: Side, entity: String, property: String, _ why: String) -> ServiceError {
        let details: [String: JSONValue] = ["entity": .string(entity), "property": .string(property)]
        switch side {
        case .above: return StoreError.coreData(.validationNumberTooLarge, 1610, "\(entity).\(property): \(why)", details)
        case .below: return StoreError.coreData(.validationNumberTooSmall, 1620, "\(entity).\(property): \(why)", details)
        }
    }

    private static func details(_ entity: String, _ attribute: AttributeDescription, _ extra: [String: JSONValue]) -> [String: JSONValue] {
        extra.merging(["entity": .string(entity), "property": .string(attribute.name)]) { $1 }
    }

    private static func text(_ value: SQLValue) -> String {
        if let number = value.int64 { return String(number) }
        return value.double.map { String($0) } ?? ""
    }
}
