import FoundationEssentials
import MeowWire

/// The model check of an attribute's validation settings: each applies to the types Xcode
/// offers it for, bounds are values of the attribute's type, and a pattern compiles.
enum AttributeSettingsCheck {
    static func check(_ attribute: AttributeDescription, entity: String) throws(ModelError) {
        let place = "\(entity).\(attribute.name)"
        let type = attribute.type
        let constraints = attribute.constraints
        let hasLength = constraints.minLength != nil || constraints.maxLength != nil || constraints.regularExpression != nil
        if hasLength, type != .string, type != .uri {
            throw ModelError("\(place): minLength, maxLength and regularExpression are for string attributes; this one is \(type.rawValue).")
        }
        if let pattern = constraints.regularExpression, !AttributeValidation.compiles(pattern) {
            throw ModelError("\(place): the regular expression \(pattern) does not compile.")
        }
        if let minimum = constraints.minLength, let maximum = constraints.maxLength, minimum > maximum {
            throw ModelError("\(place): minLength \(minimum) is more than maxLength \(maximum).")
        }
        for (key, bound) in [("minValue", constraints.minValue), ("maxValue", constraints.maxValue)] {
            guard let bound, bound != .null else { continue }
            if !isBound(bound, of: type) {
                throw ModelError("\(place): \(key) \(JSONWriter.text(bound)) is not a bound for a \(type.rawValue) attribute (numbers bound numbers, ISO-8601 text bounds dates).")
            }
        }
        if attribute.allowsExternalBinaryDataStorage, type != .binary {
            throw ModelError("\(place): allowsExternalBinaryDataStorage is for binary attributes; this one is \(type.rawValue).")
        }
        if attribute.valueTransformerName != nil, type != .transformable {
            throw ModelError("\(place): valueTransformerName is for transformable attributes; this one is \(type.rawValue).")
        }
    }

    private static func isBound(_ bound: JSONValue, of type: AttributeType) -> Bool {
        switch type {
        case .integer, .integer16, .integer32, .double, .float: return bound.doubleValue != nil
        case .decimal: return AttributeTypeCoding.decimal(bound) != nil
        case .date: return bound.stringValue.flatMap(AttributeCoding.canonicalDate) != nil
        default: return false
        }
    }
}
