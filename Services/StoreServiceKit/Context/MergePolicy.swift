import SQLiteKit

/// Core Data's merge policies: what a save does when an object it changed was changed in the
/// store since the context read it (the row's version moved).
public enum MergePolicy: String, Sendable, Codable, CaseIterable {
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

    public enum Resolution: Equatable, Sendable {
        /// Write these properties (the rest of the row stays as stored).
        case write([String: SQLValue])
        case conflict
    }

    /// Resolves one object whose stored version differs from the one the context read.
    /// `snapshot`: values the context read; `changes`: the context's edits; `stored`: the row now.
    /// A property only one side changed keeps that side's value under both property policies.
    public func resolve(snapshot: [String: SQLValue], changes: [String: SQLValue], stored: [String: SQLValue]) -> Resolution {
        switch self {
        case .error:
            return .conflict
        case .rollback:
            return .write([:])
        case .mergeByPropertyObjectTrump:
            return .write(changes)
        case .mergeByPropertyStoreTrump:
            return .write(changes.filter { key, _ in stored[key] == snapshot[key] })
        case .overwrite:
            var all = snapshot
            for (key, value) in changes { all[key] = value }
            return .write(all)
        }
    }
}

extension MergePolicy: NamedOption {
    static let optionDescription = "a merge policy"
}
