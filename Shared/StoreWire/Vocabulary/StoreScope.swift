/// Which cloud database a store mirrors to: the user's private one, or the shared one of the
/// zones others share with the user.
public enum StoreScope: String, Sendable, Codable, Hashable, CaseIterable {
    case `private`, shared
}
