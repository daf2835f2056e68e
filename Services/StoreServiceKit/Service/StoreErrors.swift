import MeowWire
import ServiceRuntime

// Core Data's failures as wire codes. The Core Data number goes in details.coreDataCode.
extension ErrorCode {
    /// Optimistic-locking failure under the error merge policy (NSManagedObjectMergeError 133020).
    public static let mergeConflict: ErrorCode = "mergeConflict"
    /// A relationship between objects of two stores (NSPersistentStoreInvalidTypeError… 133010).
    public static let crossStoreRelationship: ErrorCode = "crossStoreRelationship"
    /// The same store URL or identifier loaded twice (134081).
    public static let storeAlreadyAdded: ErrorCode = "storeAlreadyAdded"
    /// assign on an object whose ID is permanent (NSInvalidArgumentException in Core Data).
    public static let invalidReassignment: ErrorCode = "invalidReassignment"
    /// assign to a store whose configuration lacks the entity (NSInvalidArgumentException).
    public static let entityNotInStore: ErrorCode = "entityNotInStore"
    /// Strict routing: a new object with no assign and no related object that has a store.
    public static let ambiguousStoreAssignment: ErrorCode = "ambiguousStoreAssignment"
    /// NSManagedObjectValidationError 1550: a value of the wrong type.
    public static let validationInvalidValue: ErrorCode = "validationInvalidValue"
    /// NSValidationMultipleErrorsError 1560.
    public static let validationMultipleErrors: ErrorCode = "validationMultipleErrors"
    /// NSValidationMissingMandatoryPropertyError 1570.
    public static let validationMissingMandatoryProperty: ErrorCode = "validationMissingMandatoryProperty"
    /// NSValidationRelationshipDeniedDeleteError 1600.
    public static let validationRelationshipDeniedDelete: ErrorCode = "validationRelationshipDeniedDelete"
    /// NSValidationStringPatternMatchingError 1680 (a string outside the attribute's allowed values).
    public static let validationStringPatternMatching: ErrorCode = "validationStringPatternMatching"
    /// NSManagedObjectConstraintMergeError 133021: a second object with the same business id (uuid) in one store.
    public static let uniquenessConstraint: ErrorCode = "uniquenessConstraint"
    /// NSMigrationMissingMappingModelError 134140: a model change lightweight migration cannot infer.
    public static let migrationMissingMappingModel: ErrorCode = "migrationMissingMappingModel"
    /// NSMigrationError 134110: the migration ran into data it cannot carry (a mandatory value missing).
    public static let migrationFailed: ErrorCode = "migrationFailed"
    public static let unknownEntity: ErrorCode = "unknownEntity"
    public static let unknownAttribute: ErrorCode = "unknownAttribute"
    public static let unknownObject: ErrorCode = "unknownObject"
    public static let unknownContext: ErrorCode = "unknownContext"
    public static let unknownStore: ErrorCode = "unknownStore"
    public static let invalidPredicate: ErrorCode = "invalidPredicate"
}

/// Builders for the store-service's errors, so each text is written once.
package enum StoreError {
    static let mergeMessage = "Could not merge changes."
    static let crossStoreMessage = "CoreData does not support persistent cross-store relationships"
    static let duplicateStoreMessage = "Can't add the same store twice"
    static let reassignMessage = "Can't reassign an object to a different store once it has been saved."
    static let entityNotInStoreMessage = "Can't assign an object to a store that does not contain the object's entity."

    static func coreData(_ code: ErrorCode, _ number: Int, _ message: String, _ details: [String: JSONValue] = [:],
                         file: String = #fileID, line: Int = #line) -> ServiceError {
        var details = details
        details["coreDataCode"] = .int(number)
        return ServiceError(code, message, details: details, file: file, line: line)
    }

    static func unknownEntity(_ name: String, model: ManagedObjectModel) -> ServiceError {
        ServiceError(.unknownEntity, "The model '\(model.name)' has no entity '\(name)'. Entities: \(model.entities.map(\.name).joined(separator: ", ")).",
                     details: ["entity": .string(name), "entities": .array(model.entities.map { .string($0.name) })])
    }

    static func unknownProperty(_ name: String, entity: EntityDescription) -> ServiceError {
        ServiceError(.unknownAttribute, "\(entity.name) has no attribute or relationship '\(name)'. Properties: \((entity.attributes.map(\.name) + entity.relationships.map(\.name)).joined(separator: ", ")).",
                     details: ["entity": .string(entity.name), "property": .string(name)])
    }

    package static func unknownObject(_ id: String, _ why: String) -> ServiceError {
        ServiceError(.unknownObject, "No object \(id): \(why)", details: ["objectID": .string(id)])
    }

    static func invalidValue(entity: String, property: String, _ why: String) -> ServiceError {
        coreData(.validationInvalidValue, 1550, "\(entity).\(property): \(why)",
                 ["entity": .string(entity), "property": .string(property)])
    }
}
