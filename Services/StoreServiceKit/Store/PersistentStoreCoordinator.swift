import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire
import Synchronization

/// The device's stores in load order, behind one lock: like Core Data's coordinator, it
/// serialises every read and write of its stores, so a save sees and writes a consistent state.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(model: .meowCare())
/// try coordinator.addStore(configuration: "Private", url: "/data/MeowCare-Private.sqlite", filePath: "/data/MeowCare-Private.sqlite")
/// ```
public final class PersistentStoreCoordinator: Sendable {
    public let model: ManagedObjectModel
    /// The device's clock, shared by its stores and its mirror.
    public let clock = DeviceClock()
    private let state = SleepingMutex(Stores())
    /// How much the lock is used and waited for (`info.storeLock`): every save, fetch and mirror
    /// step takes it, so on a busy device it is what clients wait for.
    private let lockUse = LockUse()

    struct Stores: Sendable {
        var list: [PersistentStore] = []
    }

    /// Binary values larger than this many bytes go to the cloud as assets (`--asset-threshold`).
    public let assetThreshold: Int

    public init(model: ManagedObjectModel, assetThreshold: Int = StoreOptions.defaultAssetThreshold) {
        self.model = model
        self.assetThreshold = assetThreshold
    }

    /// Loads the store of `configuration` from `filePath` (nil: in memory). Fails with 134081
    /// "Can't add the same store twice" when a loaded store has the same URL or identifier.
    @discardableResult
    public func addStore(configuration name: String, url: String, filePath: String?) throws -> StoreDescription {
        let configuration = try configuration(named: name)
        return try state.withLock { stores in
            try refuseLoaded(url: url, in: stores)
            return try load(PersistentStore(url: url, filePath: filePath, configuration: configuration, model: model, clock: clock,
                                            assetThreshold: assetThreshold), into: &stores)
        }
    }

    /// Opens the store of `configuration` without loading it (`addOpened` loads it), so that a
    /// start-up may open its stores at once, each on a thread of its own. For a coordinator
    /// whose stores are not loaded yet: a loaded store's URL is refused only at `addOpened`.
    func openStore(configuration name: String, url: String, filePath: String?) throws -> PersistentStore {
        try PersistentStore(url: url, filePath: filePath, configuration: configuration(named: name), model: model, clock: clock,
                            assetThreshold: assetThreshold)
    }

    /// Loads a store `openStore` opened, with `addStore`'s refusals.
    @discardableResult
    func addOpened(_ store: PersistentStore) throws -> StoreDescription {
        try state.withLock { stores in
            try refuseLoaded(url: store.url, in: stores)
            return try load(store, into: &stores)
        }
    }

    private func configuration(named name: String) throws -> StoreConfiguration {
        guard let configuration = model.configurations.first(where: { $0.name == name }) else {
            throw ServiceError(.unknownStore, "The model has no configuration '\(name)'.", details: ["configuration": .string(name)])
        }
        return configuration
    }

    private func refuseLoaded(url: String, in stores: Stores) throws {
        if let loaded = stores.list.first(where: { $0.url == url }) {
            throw StoreError.coreData(.storeAlreadyAdded, 134081, StoreError.duplicateStoreMessage,
                                      ["url": .string(url), "storeUUID": .string(loaded.uuid)])
        }
    }

    private func load(_ store: PersistentStore, into stores: inout Stores) throws -> StoreDescription {
        if let loaded = stores.list.first(where: { $0.uuid == store.uuid }) {
            throw StoreError.coreData(.storeAlreadyAdded, 134081, StoreError.duplicateStoreMessage,
                                      ["url": .string(store.url), "storeUUID": .string(store.uuid), "loadedURL": .string(loaded.url)])
        }
        stores.list.append(store)
        return StoreDescription(store)
    }

    /// Runs `body` with the stores, in load order, holding the coordinator's lock.
    package func withStores<T>(_ body: (StoreSet) throws -> T) throws -> T {
        let asked = ContinuousClock.now
        return try state.withLock { stores in
            let taken = ContinuousClock.now
            defer { lockUse.add(waited: taken - asked, held: ContinuousClock.now - taken) }
            return try body(StoreSet(list: stores.list, model: model))
        }
    }

    /// The lock's use since start: how often it was taken, and the time spent waiting for it
    /// and holding it (summed over threads: waits overlap).
    public var lockStatistics: (acquisitions: Int, waitedSeconds: Double, heldSeconds: Double) { lockUse.totals }

    /// Folds each store's WAL into its main file (a clean shutdown leaves single-file stores).
    public func checkpoint() {
        state.withLock { stores in
            for store in stores.list where store.filePath != nil {
                try? store.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
    }

    /// What opening each store changed in it, for stores a newer model version migrated.
    var migrations: [StoreMigration.Report] {
        state.withLock { $0.list.compactMap(\.migration).filter(\.changed) }
    }

    public var storeDescriptions: [StoreDescription] {
        state.withLock { $0.list.map(StoreDescription.init) }
    }

    /// Per store (by configuration name), its commits since it was opened that waited for the
    /// disk and that did not (`info.commits`; stores on disk only).
    public var commitCounts: [String: (durable: Int, relaxed: Int)] {
        state.withLock { stores in
            Dictionary(stores.list.filter { $0.filePath != nil }.map { ($0.name, $0.database.ledger.counts) }, uniquingKeysWith: { first, _ in first })
        }
    }
}

/// The stores as an operation sees them while holding the coordinator's lock.
package struct StoreSet {
    package let list: [PersistentStore]
    package let model: ManagedObjectModel

    var privateIndex: Int? { list.firstIndex { $0.scope == .private } }

    package func index(uuid: String) -> Int? { list.firstIndex { $0.uuid == uuid } }

    /// A store by configuration name, store UUID or URL.
    package func index(named name: String) throws -> Int {
        if let index = list.firstIndex(where: { $0.name == name || $0.uuid == name || $0.url == name }) { return index }
        throw ServiceError(.unknownStore, "No loaded store is named '\(name)'. Stores: \(list.map(\.name).joined(separator: ", ")) (a configuration name, store UUID or URL).",
                           details: ["store": .string(name), "stores": .array(list.map { .string($0.name) })])
    }
}

extension StoreDescription {
    init(_ store: PersistentStore) {
        self.init(name: store.name, scope: store.scope, url: store.url, storeUUID: store.uuid, path: store.filePath,
                  entities: store.configuration.entities, lastHistoryToken: Int(store.lastToken))
    }
}

/// Counters of a lock's use, updated by whoever held it (atomics: read without the lock).
private final class LockUse: Sendable {
    private let acquisitions = Atomic<Int>(0)
    private let waitedNanoseconds = Atomic<Int>(0)
    private let heldNanoseconds = Atomic<Int>(0)

    func add(waited: Duration, held: Duration) {
        acquisitions.add(1, ordering: .relaxed)
        waitedNanoseconds.add(Self.nanoseconds(waited), ordering: .relaxed)
        heldNanoseconds.add(Self.nanoseconds(held), ordering: .relaxed)
    }

    var totals: (acquisitions: Int, waitedSeconds: Double, heldSeconds: Double) {
        (acquisitions.load(ordering: .relaxed), Double(waitedNanoseconds.load(ordering: .relaxed)) / 1e9,
         Double(heldNanoseconds.load(ordering: .relaxed)) / 1e9)
    }

    private static func nanoseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1_000_000_000 + Int(duration.components.attoseconds / 1_000_000_000)
    }
}
