/// How a new object without an explicit assign finds its store.
public enum RoutingMode: String, Sendable, Codable, Hashable, CaseIterable {
    /// Explicit assign, else the store of a related object, else the private store.
    case deterministic
    /// Like deterministic, but an object with neither an assign nor a related object is refused
    /// when more than one store could hold it.
    case strict
    /// Core Data's behaviour: related object, else the first store in load order that holds the
    /// entity (with the shared store loaded first, app objects land in the shared store).
    case legacy
}

/// Why a new object went to its store.
public enum RoutingReason: String, Sendable, Codable, Hashable, CaseIterable {
    case assigned, relatedObject, privateStoreDefault, onlyStoreWithEntity, loadOrder
}
