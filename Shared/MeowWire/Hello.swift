/// `hello` params: the protocol version range the client speaks, its name, an optional
/// credential (the sync-service authenticates users with it) and an optional environment (the
/// sync-service's `development` or `production`).
public struct HelloParams: Codable, Sendable {
    public var minVersion: Int
    public var maxVersion: Int
    public var client: String
    public var credential: String?
    public var environment: String?

    public init(minVersion: Int = WireLimits.minProtocolVersion, maxVersion: Int = WireLimits.maxProtocolVersion,
                client: String, credential: String? = nil, environment: String? = nil) {
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.client = client
        self.credential = credential
        self.environment = environment
    }
}

/// `hello` result: who answered, the version chosen, limits and features.
public struct HelloResult: Codable, Sendable {
    public var service: String
    public var version: String
    public var `protocol`: String
    public var protocolVersion: Int
    public var connectionID: Int
    public var limits: Limits
    public var features: [String]
    /// Event topics this service can push after `subscribe`.
    public var topics: [String]
    /// The user the credential identified, if the service has users.
    public var user: String?
    /// The environment the connection works in, if the service has environments.
    public var environment: String?

    public init(service: String, version: String, protocolVersion: Int, connectionID: Int, limits: Limits,
                features: [String], topics: [String], user: String?, environment: String? = nil) {
        self.service = service
        self.version = version
        self.protocol = WireLimits.protocolName
        self.protocolVersion = protocolVersion
        self.connectionID = connectionID
        self.limits = limits
        self.features = features
        self.topics = topics
        self.user = user
        self.environment = environment
    }

    public struct Limits: Codable, Sendable {
        public var maxFrameBytes: Int
        public var maxConnections: Int
        public var maxEventQueueBytes: Int
        public var sendTimeoutMilliseconds: Int
        public var frameTimeoutMilliseconds: Int
        public init(maxFrameBytes: Int, maxConnections: Int, maxEventQueueBytes: Int,
                    sendTimeoutMilliseconds: Int, frameTimeoutMilliseconds: Int) {
            self.maxFrameBytes = maxFrameBytes
            self.maxConnections = maxConnections
            self.maxEventQueueBytes = maxEventQueueBytes
            self.sendTimeoutMilliseconds = sendTimeoutMilliseconds
            self.frameTimeoutMilliseconds = frameTimeoutMilliseconds
        }
    }
}
