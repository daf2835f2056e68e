import CloudWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit

/// The mapping between a Core Data store and CloudKit's records (NSPersistentCloudKitContainer's
/// half that knows the model): objects ↔ records, merges by the conflict and delete policies,
/// imports, zones leaving. It writes the store through its `StoreEngine` (contexts, saves and
/// `write`), as author `sync`, so its imports are never exported again.
struct CoreDataMapping: MirrorMapping {
    /// The conflict and delete policies, the device's name (its edit stamps) and the asset threshold.
    let options: MirrorOptions
    let engine: StoreEngine
    let logger = Logger(label: "store-service.mirror")
    var clock: DeviceClock { engine.coordinator.clock }

    static let revertedEvent = "changeReverted"
    static let importRefusedEvent = "importRefused"

    /// Writes `store` as the mirror (author `sync`, never exported): its imports and its own
    /// bookkeeping tables alike, through the one way to write a store (`StoreEngine.write`).
    func write<T>(_ store: PersistentStore, commit: Database.CommitSync = .full, _ body: (inout StoreChangeRecorder) throws -> T) throws -> T {
        try engine.write(store, author: SaveOperation.syncAuthor, contextName: Self.importContextName, commit: commit, body)
    }
}
