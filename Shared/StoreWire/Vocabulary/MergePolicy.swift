/// Core Data's merge policies: what a save does when an object it changed was changed in the
/// store since the context read it (the row's version moved).
public enum MergePolicy: String, Sendable, Codable, Hashable, CaseIterable {
    /// NSErrorMergePolicy (the default): the save fails, "Could not merge changes.", 133020.
    case error
    /// NSMergeByPropertyStoreTrumpMergePolicy: per conflicting property, the stored value wins.
    case mergeByPropertyStoreTrump
    /// NSMergeByPropertyObjectTrumpMergePolicy: per conflicting property, the context's value wins.
    case mergeByPropertyObjectTrump
    /// NSOverwriteMergePolicy: the whole in-memory object is written.
    case overwrite
    /// NSRollbackMergePolicy: the context's changes to the object are dropped.
    case rollback
}

extension MergePolicy: NamedOption {
    public static let optionDescription = "a merge policy"
}
