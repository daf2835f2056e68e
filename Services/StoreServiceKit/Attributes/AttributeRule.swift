import MeowWire

/// One attribute as its values are converted and validated (`AttributeCoding`,
/// `AttributeValidation`): the description behind one reference, with what every value asks
/// worked out once.
///
/// Why a class: `AttributeDescription` is a struct of about ten counted references, and handing
/// it to the conversion copied it (a retain and a release of each) for every value, a fifth of
/// turning a bulk insert's values into storage form. An entity's rules are made once
/// (`EntityDescription.attributeRules`); other callers wrap a description for the call.
package final class AttributeRule: Sendable {
    package let attribute: AttributeDescription
    var name: String { attribute.name }
    let type: AttributeType
    /// The integer types' range (nil for the others).
    let integerRange: ClosedRange<Int64>?
    /// Whether the model sets any bound, length or pattern (most attributes set none).
    let hasConstraints: Bool

    package init(_ attribute: AttributeDescription) {
        self.attribute = attribute
        type = attribute.type
        integerRange = attribute.type.integerRange
        let constraints = attribute.constraints
        hasConstraints = constraints.minValue != nil || constraints.maxValue != nil || constraints.minLength != nil
            || constraints.maxLength != nil || constraints.regularExpression != nil
    }
}
