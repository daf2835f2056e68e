import CloudWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire
import Synchronization

/// The engine's seam (`MirrorStores`) over the store-service's Core Data stack.
struct CoreDataStores: MirrorStores {
    let engine: StoreEngine
    let identities: [StoreIdentity]
    var clock: DeviceClock { engine.coordinator.clock }
    private let tables = TablesMade()

    init(engine: StoreEngine) throws {
        self.engine = engine
        identities = try engine.coordinator.withStores { stores in
            stores.list.map { StoreIdentity(scope: $0.scope, name: $0.name, uuid: $0.uuid) }
        }
    }

    func makeTablesUnlessNew() throws -> Bool {
        try engine.coordinator.withStores { stores in
            guard !stores.list.allSatisfy(\.openedEmpty) else { return false }
            try makeTables(stores)
            return true
        }
    }

    func makeTables() throws {
        try engine.coordinator.withStores { stores in try makeTables(stores) }
    }

    /// Every turn of the mirror's begins here: the tables exist before anything reads or writes
    /// them. Under the store lock, so made once.
    private func makeTables(_ stores: StoreSet) throws {
        guard !tables.made.load(ordering: .acquiring) else { return }
        // Each store's tables are in its own database: made at once, one thread per store.
        let made = AllAtOnce.run(stores.list.indices.map { index in
            let mine = OneStore(store: CoreDataStore(engine: engine, stores: stores, index: index))
            return { @Sendable in try mine.store.write { try mine.store.bookkeeping.createTables() } }
        })
        for outcome in made { try outcome.get() }
        tables.made.store(true, ordering: .releasing)
    }

    func withStore<T>(_ scope: StoreScope, _ body: (any MirrorStore) throws -> T) throws -> T? {
        try engine.coordinator.withStores { stores in
            try makeTables(stores)
            guard let index = stores.list.firstIndex(where: { $0.scope == scope }) else { return nil }
            return try body(CoreDataStore(engine: engine, stores: stores, index: index))
        }
    }

    func withStore<T>(named name: String, _ body: (any MirrorStore) throws -> T) throws -> T {
        try engine.coordinator.withStores { stores in
            try makeTables(stores)
            return try body(CoreDataStore(engine: engine, stores: stores, index: try stores.index(named: name)))
        }
    }

    func withEveryStore<T>(_ body: ([any MirrorStore]) throws -> T) throws -> T {
        try engine.coordinator.withStores { stores in
            try makeTables(stores)
            return try body(stores.list.indices.map { CoreDataStore(engine: engine, stores: stores, index: $0) })
        }
    }

    func lastTokens() -> [Int64] {
        (try? engine.coordinator.withStores { stores in stores.list.map(\.lastToken) }) ?? []
    }

    func announce<Payload: Encodable & Sendable>(topic: String, event: String, data: Payload) {
        engine.announce(topic: topic, event: event, data: data)
    }

    func drainNotices() { engine.announcer.drain() }
}

/// Whether the mirror's tables have been made in this process (`CoreDataStores.makeTables`).
private final class TablesMade: Sendable {
    let made = Atomic<Bool>(false)
}

/// A store handed to the thread that makes its tables. `@unchecked`: that thread alone uses the
/// store (its own database) until it ends, while the caller holds the stores' lock and waits.
private struct OneStore: @unchecked Sendable {
    let store: CoreDataStore
}

/// One Core Data store in a turn of the store lock: what the engine sees of it, and what the
/// mapping takes back from the engine (`CoreDataStore.of`).
struct CoreDataStore: MirrorStore {
    let engine: StoreEngine
    let stores: StoreSet
    let index: Int
    /// The store itself, or its reading companion (`reader()`).
    let store: PersistentStore

    init(engine: StoreEngine, stores: StoreSet, index: Int, store: PersistentStore? = nil) {
        self.engine = engine
        self.stores = stores
        self.index = index
        self.store = store ?? stores.list[index]
    }

    /// The Core Data store behind a store the engine hands back: always one of these, since
    /// `CoreDataStores` made it.
    static func of(_ store: any MirrorStore) throws -> CoreDataStore {
        guard let store = store as? CoreDataStore else {
            throw ServiceError(.internalError, "The mirror's mapping was given a store it did not make (\(type(of: store))).")
        }
        return store
    }

    var name: String { store.name }
    var scope: StoreScope { store.scope }
    var lastToken: Int64 { store.lastToken }
    var bookkeeping: MirrorBookkeeping { MirrorBookkeeping(database: store.database, storeName: store.name, scope: store.scope) }
    /// The same tables, with the store's rows beside them (the mapping's view).
    var state: StoreBookkeeping { StoreBookkeeping(store) }

    func write<T>(commit: Database.CommitSync, _ body: () throws -> T) throws -> T {
        try engine.write(store, author: SaveOperation.syncAuthor, contextName: CoreDataMapping.importContextName, commit: commit) { _ in try body() }
    }

    func reader() throws -> (any MirrorStore)? {
        try store.readingCompanion().map { CoreDataStore(engine: engine, stores: stores, index: index, store: $0) }
    }

    func readSnapshot<T>(_ body: () throws -> T) throws -> T {
        try store.database.readTransaction(body)
    }

    func isSame(as other: any MirrorStore) -> Bool {
        (other as? CoreDataStore)?.store === store
    }
}
