/// `account.signIn`'s params.
public struct SignInParams: Codable, Sendable, Hashable {
    /// The cloud user's credential; absent: the one the service started with.
    public var credential: String?

    public init(credential: String? = nil) { self.credential = credential }
}

/// `sync.initializeSchema`'s params.
public struct InitializeSchemaParams: Codable, Sendable, Hashable {
    /// Build the representative records and answer the schema, without uploading (Apple's `.dryRun`).
    public var dryRun: Bool?

    public init(dryRun: Bool? = nil) { self.dryRun = dryRun }
}
