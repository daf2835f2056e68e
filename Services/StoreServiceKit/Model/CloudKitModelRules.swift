/// The model rules NSPersistentCloudKitContainer checks when it loads a mirrored store
/// (Core Data's `PFCloudKitModelValidator`): a store whose configuration breaks one does not
/// load, with NSCocoaErrorDomain 134060 ("A Core Data error occurred.") and a failure reason
/// that lists every breach. Apple's texts, order and formatting are kept (each rule's lines
/// sorted, the rules joined by newlines), so the reason reads as a device's log does.
///
/// Why a local tool checks this: a model that breaks these rules works without mirroring and
/// only fails on a device with iCloud, the kind of surprise this project exists to bring forward.
/// Apple's rules on ordered relationships and unique constraints are checked too (the service
/// refuses both at start anyway, after this check, so that `--check-model` gives Apple's reason);
/// its rules on undefined attribute types concern a type this model format does not have.
public enum CloudKitModelRules {
    /// Core Data's NSCoreDataError, the code of a refused model.
    public static let coreDataErrorNumber = 134060

    /// The failure reason for `configuration`'s entities, or nil when they can be mirrored.
    public static func failureReason(model: ManagedObjectModel, configuration: StoreConfiguration) -> String? {
        let names = Set(configuration.entities)
        let entities = model.entities.filter { names.contains($0.name) && !model.isLinkEntity($0.name) }
        guard !entities.isEmpty else { return "The configuration named '\(configuration.name)' does not contain any entities." }
        var noInverse: [String] = [], requiredAttributes: [String] = [], requiredRelationships: [String] = []
        var outside: [String] = [], deny: [String] = [], ordered: [String] = [], constrained: [String] = []
        for entity in entities {
            for constraint in entity.uniquenessConstraints { constrained.append("\(entity.name): \(constraint.joined(separator: ","))") }
            for attribute in entity.attributes where !attribute.optional && (attribute.defaultValue ?? .null) == .null {
                requiredAttributes.append("\(entity.name): \(attribute.name)")
            }
            for relationship in entity.relationships {
                if !relationship.optional { requiredRelationships.append("\(entity.name): \(relationship.name)") }
                if relationship.inverse == nil { noInverse.append("\(entity.name): \(relationship.name)") }
                if !names.contains(relationship.destination) {
                    outside.append("\(entity.name): \(relationship.name) - \(relationship.destination)")
                }
                // Apple writes this one without a space after the colon.
                if relationship.deleteRule == .deny { deny.append("\(entity.name):\(relationship.name) - Deny") }
                if relationship.ordered { ordered.append("\(entity.name): \(relationship.name)") }
            }
        }
        let rules: [(heading: String, lines: [String])] = [
            ("CloudKit integration requires that all relationships have an inverse, the following do not:", noInverse),
            ("CloudKit integration requires that all attributes be optional, or have a default value set. The following attributes are marked non-optional but do not have a default value:", requiredAttributes),
            ("CloudKit integration requires that all relationships be optional, the following are not:", requiredRelationships),
            ("CloudKit integration does not allow relationships to objects that aren't sync'd. The following relationships have destination entities that not in the specified configuration.", outside),
            ("The following relationships are configured with unsupported delete rules:", deny),
            ("CloudKit integration does not support ordered relationships. The following relationships are marked ordered:", ordered),
            ("CloudKit integration does not support unique constraints. The following entities are constrained:", constrained),
        ]
        let reasons = rules.filter { !$0.lines.isEmpty }.map { rule in
            // localizedCaseInsensitiveCompare, as Apple sorts each list.
            ([rule.heading] + rule.lines.sorted { ($0.lowercased(), $0) < ($1.lowercased(), $1) }).joined(separator: "\n")
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "\n")
    }

    /// Each configuration's refusal, as start-up reports it (empty: the model can be mirrored).
    public static func refusals(of model: ManagedObjectModel) -> [String] {
        model.configurations.compactMap { configuration in
            failureReason(model: model, configuration: configuration).map {
                "the \(configuration.name) store cannot be mirrored with CloudKit: coreDataError (\(coreDataErrorNumber)) A Core Data error occurred. \($0)"
            }
        }
    }
}
