import CloudWire
import SQLiteKit
import StoreServiceKit
import StoreWire

/// What the engine uses of the stores it mirrors and of the service it runs in; the Core Data
/// stack behind it is the mapping's side (`CoreDataStores`). Every store is reached in one turn
/// of the store lock, so what the engine reads and writes in a turn is one consistent state.
protocol MirrorStores: Sendable {
    /// Each store's name, scope and identifier (fixed once loaded: `cloudKitEvents` names them
    /// without a turn of the lock, which a reconnect inside a locked step could not take again).
    var identities: [StoreIdentity] { get }
    /// The device's clock (retry-after moments, stamps, `sync.status`).
    var clock: DeviceClock { get }

    /// Makes the mirror's tables in every store now, unless opening found every store without
    /// tables (in memory, a new file: no bookkeeping to read, no older layout to upgrade); then
    /// they are made by the first turn below. Returns whether they were made.
    func makeTablesUnlessNew() throws -> Bool
    /// Makes the mirror's tables now if they are not yet (a snapshot reads or writes them).
    func makeTables() throws

    /// `body` on the store of `scope` in one turn of the store lock; nil when none is loaded.
    @discardableResult
    func withStore<T>(_ scope: StoreScope, _ body: (any MirrorStore) throws -> T) throws -> T?
    /// `body` on the store named `name` (a batch's store); unknownStore when it is gone.
    func withStore<T>(named name: String, _ body: (any MirrorStore) throws -> T) throws -> T
    /// `body` on every store in one turn (sign-out, status).
    func withEveryStore<T>(_ body: ([any MirrorStore]) throws -> T) throws -> T
    /// Each store's newest history token: automatic mode sends when one moves.
    func lastTokens() -> [Int64]

    /// Tells the device's clients `event` on `topic` (`cloudKitEvents`).
    func announce<Payload: Encodable & Sendable>(topic: String, event: String, data: Payload)
    /// Returns once every notice given so far went out (an explicit sync answers after its
    /// imports' remote-change events).
    func drainNotices()
}

/// One store as the engine sees it, valid inside the turn that gave it.
protocol MirrorStore {
    var name: String { get }
    var scope: StoreScope { get }
    /// The newest history token (the export cursor moves past the mirror's own writes to it).
    var lastToken: Int64 { get }
    /// The mirror's `mirror_*` tables in the store's file.
    var bookkeeping: MirrorBookkeeping { get }
    /// Runs `body` in one transaction of the store, as the mirror (author `sync`, never
    /// exported). `commit: .deferred`: without waiting for the disk (state derivable again).
    func write<T>(commit: Database.CommitSync, _ body: () throws -> T) throws -> T
    /// The store on its reading connection, for batches built from a snapshot without the store
    /// lock; nil for a store with one connection (in memory).
    func reader() throws -> (any MirrorStore)?
    /// `body` in one read snapshot of this (reading) store.
    func readSnapshot<T>(_ body: () throws -> T) throws -> T
    /// Whether `other` is this very store (not one loaded in its place meanwhile).
    func isSame(as other: any MirrorStore) -> Bool
}

extension MirrorStore {
    /// The cloud database a store mirrors.
    var database: DatabaseScope { scope == .private ? .private : .shared }

    func write<T>(_ body: () throws -> T) throws -> T { try write(commit: .full, body) }
}

/// A store's name, scope and identifier, for `cloudKitEvents`.
struct StoreIdentity: Sendable {
    var scope: StoreScope
    var name: String
    var uuid: String
}
