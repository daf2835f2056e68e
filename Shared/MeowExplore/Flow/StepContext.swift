import MeowCareCluster
import MeowWire
import Synchronization

/// What an app keeps in memory between its steps: a custom step's scratch space, one per
/// actor per run, lost when the device is killed (the app relaunches with nothing).
public final class AppMemory: Sendable {
    private let values = Mutex<[String: JSONValue]>([:])

    public init() {}

    public subscript(key: String) -> JSONValue? {
        get { values.withLock { $0[key] } }
        set { values.withLock { $0[key] = newValue } }
    }
}

/// What a team's own step gets: the actor's device (its main connection, the one the actor's
/// built-in steps use), the cluster, the step's params, and the run's symbolic names.
public final class StepContext: Sendable {
    /// The actor's device.
    public let device: MeowDevice
    /// The whole cluster (other devices, the cloud).
    public let cluster: MeowCluster
    /// The actor's device name.
    public let actor: String
    /// The user the device is signed in as now.
    public let user: String
    /// The params the step carries (a flow file's `params`).
    public let params: JSONValue
    /// The seed of the run.
    public let seed: UInt64
    /// The app's memory on this device: what earlier custom steps of the actor left there.
    public let memory: AppMemory
    private let uuids: [String: String]
    private let entities: [String: String]
    private let zones: [String: (zoneName: String, owner: String)]

    init(device: MeowDevice, cluster: MeowCluster, actor: String, user: String, params: JSONValue, seed: UInt64, memory: AppMemory,
         uuids: [String: String], entities: [String: String], zones: [String: (zoneName: String, owner: String)]) {
        self.device = device
        self.cluster = cluster
        self.actor = actor
        self.user = user
        self.params = params
        self.seed = seed
        self.memory = memory
        self.uuids = uuids
        self.entities = entities
        self.zones = zones
    }

    /// The UUID (record name) the run gave the flow's object `name`.
    public func uuid(of name: String) -> String? { uuids[name] }

    /// The share's zone and owner, once its `shareCreate` step has run.
    public func zone(of share: String) -> (zoneName: String, owner: String)? { zones[share] }

    /// The object `name` as this device holds it now, or nil when it has not arrived (or is gone).
    public func object(_ name: String) async throws(MeowCareError) -> ManagedObject? {
        guard let uuid = uuids[name], let entity = entities[name] else { return nil }
        return try await device.fetch(entity, where: "uuid == %@", [.string(uuid)]).first
    }
}
