import MeowWire

/// Who a connection acts as once hello has checked its credential.
public struct Principal: Sendable, Hashable {
    public var user: String
    public var isAdmin: Bool
    public init(user: String, isAdmin: Bool = false) {
        self.user = user
        self.isAdmin = isAdmin
    }
}

/// One health check: ready or not, and why.
public struct HealthCheck: Sendable, Codable, Hashable {
    public var name: String
    public var ok: Bool
    public var detail: String
    public init(name: String, ok: Bool, detail: String) {
        self.name = name
        self.ok = ok
        self.detail = detail
    }
}

/// What makes a service a store-service or a sync-service: its operations and its state.
/// The runtime does everything else (sockets, framing, hello, ping/health/info, events).
public protocol ServiceDefinition: Sendable {
    var name: String { get }
    var version: String { get }
    /// Feature names advertised in hello (what a client may rely on).
    var features: [String] { get }
    /// Event topics a connection may `subscribe` to, besides the runtime's own `service`.
    var topics: [String] { get }
    /// Opens stores and databases; runs before the socket is bound. Throwing stops start-up.
    func start(events: EventHub) throws
    func registerOperations(in registry: inout OperationRegistry)
    /// Checks a hello's credential: nil for an anonymous connection, or throws notAuthenticated.
    func authenticate(credential: String?, connection: ConnectionHandle) throws -> Principal?
    /// The environment a hello's `environment` param chooses (nil: the service has none), or
    /// throws for one it does not have. Runs before the credential is checked.
    func helloEnvironment(_ requested: String?) throws -> String?
    func healthChecks() -> [HealthCheck]
    /// Service-specific parts of `info` (persistence paths, store identities, …).
    func infoDetails() -> [String: JSONValue]
    func connectionClosed(_ connection: ConnectionHandle)
    /// Runs after the last connection closed, before the process exits.
    func stop()
}

extension ServiceDefinition {
    public var features: [String] { [] }
    public var topics: [String] { [] }
    public func start(events: EventHub) throws {}
    public func authenticate(credential: String?, connection: ConnectionHandle) throws -> Principal? { nil }
    public func helloEnvironment(_ requested: String?) throws -> String? {
        guard let requested else { return nil }
        throw WireError(.invalidField, "This \(name) has no environments (asked for '\(requested.prefix(64))'); leave params.environment out.",
                        details: ["field": "params.environment"])
    }
    public func healthChecks() -> [HealthCheck] { [] }
    public func infoDetails() -> [String: JSONValue] { [:] }
    public func connectionClosed(_ connection: ConnectionHandle) {}
    public func stop() {}
}
