/// The two databases a user reaches. (CloudKit's public database is not modelled.)
public enum DatabaseScope: String, Codable, Sendable, Hashable {
    case `private`, shared
}
