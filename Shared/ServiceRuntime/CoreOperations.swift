#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import MeowWire

/// `ping` result.
public struct PingResult: Codable, Sendable {
    public var pong: Bool
    public var echo: JSONValue?
}

struct PingParams: Codable, Sendable {
    var echo: JSONValue?
}

/// `subscribe` / `unsubscribe` params and result.
public struct TopicsParams: Codable, Sendable {
    public var topics: [String]
}

/// `health` result.
public struct HealthResult: Codable, Sendable {
    public var status: String
    public var ready: Bool
    public var checks: [HealthCheck]
}

extension HealthResult: JSONTextWritable {
    /// The compact text its Encodable form gives, written without the encoder: a fixture asks
    /// each service for health once, as its first request after hello, where the encoder's
    /// first uses were most of the reply's cost.
    public func writeJSON(to out: inout String) -> Bool {
        out += #"{"status":"#; JSONWriter.appendString(status, to: &out)
        out += ready ? #","ready":true,"checks":["# : #","ready":false,"checks":["#
        for (index, check) in checks.enumerated() {
            out += index == 0 ? #"{"name":"# : #",{"name":"#
            JSONWriter.appendString(check.name, to: &out)
            out += check.ok ? #","ok":true,"detail":"# : #","ok":false,"detail":"#
            JSONWriter.appendString(check.detail, to: &out)
            out += "}"
        }
        out += "]}"
        return true
    }
}

/// The ops every service answers: hello, ping, health, info, subscribe, unsubscribe.
enum CoreOperations {
    static func register(in registry: inout OperationRegistry, definition: any ServiceDefinition,
                         configuration: ServiceConfiguration, statistics: ServerStatistics, events: EventHub,
                         frameBudget: FrameBudget) {
        let topics = [EventHub.serviceTopic, ProgressReporter.topic] + definition.topics
        registerConversationOperations(in: &registry, definition: definition, configuration: configuration, topics: topics)
        registerStatusOperations(in: &registry, definition: definition, configuration: configuration, statistics: statistics,
                                 events: events, frameBudget: frameBudget, topics: topics)
        registerEventOperations(in: &registry, topics: topics)
    }

    /// hello (which opens the conversation: version, user, environment) and ping. `topics`:
    /// every topic the service has, which hello announces.
    private static func registerConversationOperations(in registry: inout OperationRegistry, definition: any ServiceDefinition,
                                                       configuration: ServiceConfiguration, topics: [String]) {
        let limits = HelloResult.Limits(
            maxFrameBytes: configuration.maxFrameBytes, maxConnections: configuration.maxConnections,
            maxEventQueueBytes: configuration.maxEventQueueBytes,
            sendTimeoutMilliseconds: configuration.sendTimeoutMilliseconds,
            frameTimeoutMilliseconds: configuration.frameTimeoutMilliseconds)

        registry.register("hello", params: HelloParams.self, summary: "Opens the conversation; must come first.") { params, context in
            guard !context.connection.helloDone else {
                throw WireError(.helloAlreadyDone, "This connection already said hello; open a new connection to change user or version.")
            }
            let chosen = min(params.maxVersion, WireLimits.maxProtocolVersion)
            guard params.minVersion <= params.maxVersion, chosen >= max(params.minVersion, WireLimits.minProtocolVersion) else {
                throw WireError(.unsupportedVersion,
                                "This service speaks protocol versions \(WireLimits.minProtocolVersion)–\(WireLimits.maxProtocolVersion); the client asked for \(params.minVersion)–\(params.maxVersion).",
                                details: ["supported": ["min": .int(WireLimits.minProtocolVersion), "max": .int(WireLimits.maxProtocolVersion)],
                                          "requested": ["min": .int(params.minVersion), "max": .int(params.maxVersion)]])
            }
            let environment = try definition.helloEnvironment(params.environment)
            let principal = try HelloThrottle.guarding(context.connection) {
                try definition.authenticate(credential: params.credential, connection: context.connection)
            }
            context.connection.completeHello(client: params.client, version: chosen, principal: principal, environment: environment)
            context.logger.info("hello", ["connection": .int(context.connection.id), "client": .string(params.client),
                                          "user": principal.map { .string($0.user) } ?? .null])
            return HelloResult(service: definition.name, version: definition.version, protocolVersion: chosen,
                               connectionID: context.connection.id, limits: limits,
                               features: definition.features, topics: topics, user: principal?.user, environment: environment)
        }

        registry.register("ping", params: PingParams.self, summary: "Answers at once; echoes params.echo.") { params, _ in
            PingResult(pong: true, echo: params.echo)
        }
    }

    /// health and info: whether the service is ready, and its version, uptime, persistence and connections.
    private static func registerStatusOperations(in registry: inout OperationRegistry, definition: any ServiceDefinition,
                                                 configuration: ServiceConfiguration, statistics: ServerStatistics, events: EventHub,
                                                 frameBudget: FrameBudget, topics: [String]) {
        registry.register("health", params: Empty.self, summary: "Ready or not, and why.") { _, _ in
            var checks = [HealthCheck(name: "listener", ok: true, detail: "accepting connections on \(statistics.socketPath)")]
            checks += definition.healthChecks()
            let ready = checks.allSatisfy(\.ok)
            return HealthResult(status: ready ? "ready" : "notReady", ready: ready, checks: checks)
        }

        registry.register("info", params: Empty.self, summary: "Version, uptime, persistence, connections.") { _, _ in
            let counts = statistics.snapshot
            var persistence: [String: JSONValue] = ["mode": .string(configuration.persistence.modeName)]
            if case let .dataDirectory(dir) = configuration.persistence { persistence["dataDir"] = .string(dir) }
            var info: [String: JSONValue] = [
                "service": .string(definition.name),
                "version": .string(definition.version),
                "pid": .int(Int(getpid())),
                "startedAt": .string(statistics.startedAt.formatted(.iso8601)),
                "uptimeSeconds": .double((Date().timeIntervalSince(statistics.startedAt) * 1000).rounded() / 1000),
                "protocol": ["name": .string(WireLimits.protocolName), "minVersion": .int(WireLimits.minProtocolVersion),
                             "maxVersion": .int(WireLimits.maxProtocolVersion)],
                "socket": ["path": .string(statistics.socketPath), "activation": .string(counts.activation)],
                "persistence": .object(persistence),
                "connections": ["open": .int(events.count), "accepted": .int(counts.accepted),
                                "refused": .int(counts.refused), "limit": .int(configuration.maxConnections),
                                "perPeerLimit": .int(configuration.maxConnectionsPerPeer),
                                "pendingLimit": .int(configuration.maxPendingConnections),
                                "helloTimeoutMilliseconds": .int(configuration.helloTimeoutMilliseconds)],
                "bufferedBytes": ["unfinishedFrames": .int(frameBudget.inUse), "limit": .int(frameBudget.limit)],
                "topics": .array(topics.map { .string($0) }),
            ]
            info["ops"] = .array(statistics.opNames.map { .string($0) })
            for (key, value) in definition.infoDetails() {
                if key == "persistence", case let .object(extra) = value {
                    info["persistence"] = .object(persistence.merging(extra) { _, new in new })
                } else {
                    info[key] = value
                }
            }
            return info
        }
    }

    /// subscribe and unsubscribe: the connection's choice of the service's event topics.
    private static func registerEventOperations(in registry: inout OperationRegistry, topics: [String]) {
        registry.register("subscribe", params: TopicsParams.self, summary: "Starts events for the given topics.") { params, context in
            for (index, topic) in params.topics.enumerated() where !topics.contains(topic) {
                throw WireError(.invalidField, "Unknown topic '\(topic.prefix(64))'. Topics: \(topics.joined(separator: ", ")).",
                                details: ["field": .string("params.topics[\(index)]"), "topics": .array(topics.map { .string($0) })])
            }
            return TopicsParams(topics: context.connection.subscribe(params.topics).sorted())
        }
        registry.register("unsubscribe", params: TopicsParams.self, summary: "Stops events for the given topics.") { params, context in
            TopicsParams(topics: context.connection.unsubscribe(params.topics).sorted())
        }
    }
}

