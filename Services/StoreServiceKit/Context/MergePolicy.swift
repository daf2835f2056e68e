import SQLiteKit
import StoreWire

/// How a policy resolves a conflict (the cases are the protocol's, in StoreWire).
extension MergePolicy {
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
