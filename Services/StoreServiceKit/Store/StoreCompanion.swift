import CloudWire
import ServiceRuntime

/// What a store-service runs beside its stores and knows only through these calls: the CloudKit
/// mirror (CloudMirrorKit) when the device mirrors, so the Core Data stack builds, runs and is
/// tested without any cloud code.
package protocol StoreCompanion: Sendable {
    /// Event topics it publishes, announced in the service's hello beside `remoteChange`.
    var topics: [String] { get }
    /// Whether it speaks for a cloud: then only it may write as the mirror or set what the cloud
    /// decides (share metadata, permissions).
    var mirrors: Bool { get }
    /// Starts once the stores are open, before the socket binds.
    func start(engine: StoreEngine) throws
    func stop()
    /// Its operations (the mirror's sync.*, share.* and account.*).
    func registerOperations(in registry: inout OperationRegistry)
    /// Runs `body` between the companion's steps, never in the middle of one (a device
    /// snapshot is taken and put back this way).
    func pausing<T>(_ body: () throws -> T) throws -> T
    /// After a snapshot import into `store`, inside its transaction: the shared zones the
    /// snapshot named that the cloud has not told this device about. The companion fetches them
    /// again, which brings their share and with it this device's permission there.
    func relearnShares(of zones: [ZoneID], in store: PersistentStore) throws
}
