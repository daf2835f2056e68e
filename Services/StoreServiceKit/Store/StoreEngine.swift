#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import MeowWire
import ServiceRuntime
import StoreWire
import Synchronization

/// The running store-service: the coordinator, the routing rule, the event hub, and each
/// connection's contexts.
package final class StoreEngine: Sendable {
    package static let remoteChangeTopic = "remoteChange"
    static let contextsKey = "store.contexts"

    package let coordinator: PersistentStoreCoordinator
    package let router: StoreRouter
    let events: EventHub
    /// Events in commit order, a fetched page's once it is on disk.
    package let announcer = OrderedAnnouncer()
    package let logger = Logger(label: "store-service.store")
    private let commitObservers = Mutex<[@Sendable ([RemoteChangeNotice]) -> Void]>([])

    init(coordinator: PersistentStoreCoordinator, routing: RoutingMode, events: EventHub) {
        self.coordinator = coordinator
        self.events = events
        router = StoreRouter(mode: routing, stores: coordinator.storeDescriptions.map {
            StoreRouter.StoreInfo(name: $0.name, scope: $0.scope, entities: Set($0.entities))
        })
    }

    package var model: ManagedObjectModel { coordinator.model }

    /// Opens both stores of `model` in `loadOrder`: files `<Model>-<Configuration>.sqlite` in
    /// `directory`, or in-memory stores with distinct URLs (two in-memory stores with one
    /// identity would be one database).
    static func openStores(model: ManagedObjectModel, persistence: ServiceConfiguration.Persistence,
                           loadOrder: [StoreScope], assetThreshold: Int = StoreOptions.defaultAssetThreshold) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(model: model, assetThreshold: assetThreshold)
        let memoryDirectory = "memory:///\(model.name)-InMemory-\(UUID().uuidString)"
        if case let .dataDirectory(directory) = persistence {
            do { try PrivateDirectory.make(directory) } catch { throw ServiceError(.internalError, "Cannot create the data directory: \(error.message)") }
        }
        let locations = loadOrder.map { scope -> (configuration: String, url: String, filePath: String?) in
            let configuration = model.configuration(scope: scope)
            let fileName = "\(model.name)-\(configuration.name).sqlite"
            switch persistence {
            case let .dataDirectory(directory):
                let path = "\(directory)/\(fileName)"
                return (configuration.name, "file://\(path)", path)
            case .inMemory:
                return (configuration.name, "\(memoryDirectory)/\(fileName)", nil)
            }
        }
        // Each store is its own database: they are opened (schemas made, files migrated) at
        // once, then loaded in load order, the first failure in that order reported.
        let opened = AllAtOnce.run(locations.map { location in
            { @Sendable in try coordinator.openStore(configuration: location.configuration, url: location.url, filePath: location.filePath) }
        })
        for store in opened { try coordinator.addOpened(store.get()) }
        return coordinator
    }

    // MARK: Contexts

    func contexts(_ connection: ConnectionHandle) -> ContextTable {
        if let table = connection.attachment(Self.contextsKey, as: ContextTable.self) { return table }
        let table = ContextTable()
        connection.setAttachment(Self.contextsKey, table)
        return table
    }

    /// Runs `body` with the connection's context `id` and the stores (context lock, then the
    /// coordinator's lock: always in this order).
    /// `lockingStores: false` for work that reads only what a store set never changes (the
    /// model, the stores' names and entities: `object.insert`), which then runs on a snapshot of
    /// the set without the store lock, so a large insert does not hold up the device's mirror.
    /// (Contexts are only ever touched under their connection's table lock, held here either way.)
    func withContext<T: Sendable>(_ connection: ConnectionHandle, _ id: String, lockingStores: Bool = true,
                                  _ body: (ManagedObjectContext, StoreSet) throws -> T) throws -> T {
        try contexts(connection).with(id) { context in
            if lockingStores { return try coordinator.withStores { stores in try body(context, stores) } }
            let stores = try coordinator.withStores { $0 }
            return try body(context, stores)
        }
    }

    /// Call under the store lock, right after the commit the notices are of: announcements
    /// leave in the order they are made, so made under the lock they leave in commit order.
    package func publish(_ notices: [RemoteChangeNotice], from connection: ConnectionHandle?) {
        guard !notices.isEmpty else { return }
        tellObservers(notices)
        announcer.now { [events] in Self.send(notices, on: events, skipping: connection) }
    }

    /// `remoteChange` events, to every subscriber but `connection` (the saving client's own).
    private static func send(_ notices: [RemoteChangeNotice], on events: EventHub, skipping connection: ConnectionHandle?) {
        for notice in notices {
            events.publish(topic: remoteChangeTopic, event: remoteChangeTopic, data: notice) { $0.id != connection?.id }
        }
    }

    /// Publishes the notice of a commit made without waiting for the disk once `store`'s log is
    /// synced (`OrderedAnnouncer`); at once for an in-memory store. Call under the store lock,
    /// right after the commit.
    func publishOnceDurable(_ notices: [RemoteChangeNotice], store: PersistentStore) {
        guard let path = store.filePath else { return publish(notices, from: nil) }
        tellObservers(notices)
        announcer.afterSync(path: path) { [events] in Self.send(notices, on: events, skipping: nil) }
    }

    /// Calls `observer` with the notices of every commit that changed something, whoever wrote it,
    /// under the store lock right after the commit (so in commit order): it must return quickly.
    package func observeCommits(_ observer: @escaping @Sendable ([RemoteChangeNotice]) -> Void) {
        commitObservers.withLock { $0.append(observer) }
    }

    private func tellObservers(_ notices: [RemoteChangeNotice]) {
        for observer in commitObservers.withLock({ $0 }) { observer(notices) }
    }

    /// Publishes an event in order with the remote-change notices (`OrderedAnnouncer.now`).
    package func announce<Payload: Encodable & Sendable>(topic: String, event: String, data: Payload) {
        announcer.now { [events] in _ = events.publish(topic: topic, event: event, data: data) }
    }
}

/// One connection's open contexts. A connection's requests run one at a time on its thread;
/// the lock keeps the table safe anyway (and the coordinator's lock is only taken inside it).
final class ContextTable: Sendable {
    static let maxContexts = 64
    private let state = Mutex(Contexts())

    struct Contexts: ~Copyable {
        var byID: [String: ManagedObjectContext] = [:]
        var next = 1
    }

    func open(name: String?, author: String, mergePolicy: MergePolicy) throws -> String {
        try state.withLock { contexts in
            guard contexts.byID.count < Self.maxContexts else {
                throw ServiceError(.limitExceeded, "This connection has \(Self.maxContexts) open contexts; close some with context.close.",
                                   details: ["limit": .int(Self.maxContexts)])
            }
            let id = "c\(contexts.next)"
            contexts.next += 1
            contexts.byID[id] = ManagedObjectContext(id: id, name: name, author: author, mergePolicy: mergePolicy)
            return id
        }
    }

    func close(_ id: String) throws {
        try state.withLock { contexts in
            guard contexts.byID.removeValue(forKey: id) != nil else { throw Self.unknown(id) }
        }
    }

    func with<T: Sendable>(_ id: String, _ body: (ManagedObjectContext) throws -> T) throws -> T {
        try state.withLock { contexts in
            guard let context = contexts.byID[id] else { throw Self.unknown(id) }
            return try body(context)
        }
    }

    static func unknown(_ id: String) -> ServiceError {
        ServiceError(.unknownContext, "No open context '\(id)' on this connection; open one with context.open (contexts belong to the connection that opened them).",
                     details: ["context": .string(id)])
    }
}
