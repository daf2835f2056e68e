import MeowWire

/// CloudKit's two environments of one container: Development (the schema grows as saves need
/// it; what Xcode builds use) and Production (only deployed record types and fields; what App
/// Store and TestFlight builds use). Each has its own zones, records, shares, change tokens and
/// subscriptions; the users are the same.
public enum CloudEnvironment: String, CloudVocabulary {
    case development, production

    public static let vocabularyName = "an environment"

    /// The environment `text` names; nil gives `fallback`. Anything else is `invalidField` for
    /// `field`, naming the two that exist.
    public static func named(_ text: String?, field: String, fallback: CloudEnvironment = .development) throws(WireError) -> CloudEnvironment {
        guard let text else { return fallback }
        guard let environment = CloudEnvironment(rawValue: text) else {
            throw WireError(.invalidField, "Unknown environment '\(text.prefix(64))': a container has development and production.",
                            details: ["field": .string(field), "environments": ["development", "production"]])
        }
        return environment
    }
}
