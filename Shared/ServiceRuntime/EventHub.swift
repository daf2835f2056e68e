import FoundationEssentials
import MeowWire
import Synchronization

/// The live connections of a service, and the way to push events to the ones that subscribed.
///
/// ```swift
/// hub.publish(topic: "remoteChange", event: "remoteChange", data: notice) { $0.id != origin }
/// ```
public final class EventHub: Sendable {
    /// The runtime's own topic: `shuttingDown` is published on it when the service stops.
    public static let serviceTopic = "service"

    private let connections = Mutex([Int: ConnectionHandle]())

    public init() {}

    func add(_ connection: ConnectionHandle) { connections.withLock { $0[connection.id] = connection } }
    func remove(_ connection: ConnectionHandle) { connections.withLock { _ = $0.removeValue(forKey: connection.id) } }

    public var all: [ConnectionHandle] { connections.withLock { Array($0.values) } }
    public var count: Int { connections.withLock { $0.count } }

    /// Publishes to every connection subscribed to `topic` that `include` accepts. The data is
    /// encoded once; each connection gives the event its own sequence number.
    @discardableResult
    public func publish<Payload: Encodable>(topic: String, event: String, data: Payload,
                                            include: (ConnectionHandle) -> Bool = { _ in true }) -> Int {
        let targets = all.filter { $0.isSubscribed(to: topic) && include($0) }
        guard !targets.isEmpty else { return 0 }
        if let writable = data as? JSONTextWritable {
            var text = ""
            if writable.writeJSON(to: &text) {
                let bytes = Array(text.utf8)
                for connection in targets { connection.push(event: event, dataJSON: bytes) }
                return targets.count
            }
        }
        guard let bytes = try? JSONTextEncoder(options: .sortedKeys).bytes(data) else { return 0 }
        for connection in targets { connection.push(event: event, dataJSON: bytes) }
        return targets.count
    }
}
