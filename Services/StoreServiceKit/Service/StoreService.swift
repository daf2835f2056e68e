import FoundationEssentials
import MeowWire
import ServiceRuntime
import Synchronization

/// One device's Core Data stack: its private and shared stores, served over the wire.
///
/// ```swift
/// let service = StoreService(configuration: configuration, options: StoreOptions(), model: .meowCare())
/// ServiceMain.run(service, configuration: configuration)
/// ```
public final class StoreService: ServiceDefinition {
    public let name = "store-service"
    public let version = MeowVersion.current
    public static let versionString = MeowVersion.current
    public let configuration: ServiceConfiguration
    public let options: StoreOptions
    public let model: ManagedObjectModel
    private let running = Mutex<StoreEngine?>(nil)
    private let logger = Logger(label: "store-service")
    /// The cloud mirror when the device mirrors (CloudMirrorKit), else nil.
    let companion: (any StoreCompanion)?

    public convenience init(configuration: ServiceConfiguration, options: StoreOptions = StoreOptions(), model: ManagedObjectModel = .meowCare()) {
        self.init(configuration: configuration, options: options, model: model, companion: nil)
    }

    package init(configuration: ServiceConfiguration, options: StoreOptions, model: ManagedObjectModel, companion: (any StoreCompanion)?) {
        self.configuration = configuration
        self.options = options
        self.model = model
        self.companion = companion
    }

    public static let summary = "one device's Core Data stack (a private and a shared store) over a Unix socket"
    /// The runtime's options and the stack's; the executable adds the mirror's.
    public static let commandLineOptions = ServiceConfiguration.commandLineOptions + StoreOptions.commandLineOptions

    public var topics: [String] { [StoreEngine.remoteChangeTopic] + (companion?.topics ?? []) }
    public var features: [String] { ["contexts", "history", "remoteChange", "orphanRepair", "routing.\(options.routing.rawValue)"] }

    func engine() throws -> StoreEngine {
        guard let engine = running.withLock({ $0 }) else {
            throw ServiceError(.internalError, "The stores are not open yet.")
        }
        return engine
    }

    /// Opens both stores (before the socket binds) and runs the start-up orphan repair.
    public func start(events: EventHub) throws {
        let coordinator = try StoreEngine.openStores(model: model, persistence: configuration.persistence, loadOrder: options.loadOrder,
                                                         assetThreshold: options.assetThreshold)
        let engine = StoreEngine(coordinator: coordinator, routing: options.routing, events: events)
        for store in coordinator.storeDescriptions {
            logger.info("store loaded", ["store": .string(store.name), "url": .string(store.url), "storeUUID": .string(store.storeUUID),
                                         "lastHistoryToken": .int(store.lastHistoryToken)])
        }
        // What a newer model version changed, one line per store (meowcare-local upgrade reads it).
        for report in coordinator.migrations {
            logger.notice("store migrated", report.fields.merging(["model": .string(model.name)]) { first, _ in first })
        }
        if options.orphanRepairAtStart, let rule = model.orphanRepair {
            let report = try coordinator.withStores { stores in try OrphanRepair(rule: rule, stores: stores).runAtStart(author: "app", engine: engine) }
            logger.info("orphan repair", ["session": .string(report.session), "sessionCreated": .bool(report.sessionCreated),
                                          "attached": .int(report.attached), "skipped": .int(report.skippedCount)])
        }
        running.withLock { $0 = engine }
        try companion?.start(engine: engine)
    }

    public func stop() {
        companion?.stop()
        try? engine().coordinator.checkpoint()
    }

    public func registerOperations(in registry: inout OperationRegistry) {
        registerStoreOperations(in: &registry)
        companion?.registerOperations(in: &registry)
        registerSnapshotOperations(in: &registry)
    }

    public func healthChecks() -> [HealthCheck] {
        guard let engine = try? engine() else { return [HealthCheck(name: "stores", ok: false, detail: "stores not open")] }
        let stores = engine.coordinator.storeDescriptions
        return [HealthCheck(name: "stores", ok: stores.count == 2, detail: stores.map { "\($0.name) \($0.storeUUID)" }.joined(separator: ", "))]
    }

    public func infoDetails() -> [String: JSONValue] {
        guard let engine = try? engine() else { return [:] }
        let stores = engine.coordinator.storeDescriptions
        let files = stores.compactMap(\.path).flatMap { [$0, "\($0)-wal", "\($0)-shm"] }
        return [
            "persistence": ["files": .array(files.map { .string($0) }),
                            "durability": "SQLite WAL, synchronous=FULL: a save is on disk when its reply is sent"],
            "stores": (try? JSONValue(encoding: stores)) ?? .null,
            "model": .string(model.name),
            "routing": .string(options.routing.rawValue),
            "storeLock": Self.lockJSON(engine.coordinator.lockStatistics),
            "commits": .object(engine.coordinator.commitCounts.mapValues { ["durable": .int($0.durable), "relaxed": .int($0.relaxed)] }),
            "logSyncs": .int(engine.announcer.logSyncs),
        ]
    }

    private static func lockJSON(_ use: (acquisitions: Int, waitedSeconds: Double, heldSeconds: Double)) -> JSONValue {
        ["acquisitions": .int(use.acquisitions), "waitedSeconds": .double(use.waitedSeconds), "heldSeconds": .double(use.heldSeconds)]
    }
}
