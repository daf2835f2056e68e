import MeowCareCluster
import MeowHistory
import MeowWire
import Synchronization

/// How a run chooses: drawn from a seed, or replayed from a choice list.
enum RunMode: Sendable {
    case draw(seed: UInt64)
    case replay([Choice], seed: UInt64)

    var seed: UInt64 {
        switch self {
        case let .draw(seed), let .replay(_, seed): seed
        }
    }
}

/// The model's entities as the explorer needs them: attribute types (to make a fresh value per
/// write) and relationships (to report to-one links by UUID).
struct ModelInfo: Sendable {
    struct Entity: Sendable {
        var attributes: [String: String]
        var relationships: [String: Bool]
    }
    var entities: [String: Entity]
    var entityNames: [String]

    init(_ model: JSONValue) {
        var entities: [String: Entity] = [:]
        var names: [String] = []
        for entity in model["entities"]?.arrayValue ?? [] {
            guard let name = entity["name"]?.stringValue else { continue }
            var attributes: [String: String] = [:]
            for attribute in entity["attributes"]?.arrayValue ?? [] {
                if let attributeName = attribute["name"]?.stringValue { attributes[attributeName] = attribute["type"]?.stringValue ?? "string" }
            }
            var relationships: [String: Bool] = [:]
            for relationship in entity["relationships"]?.arrayValue ?? [] {
                if let relationshipName = relationship["name"]?.stringValue { relationships[relationshipName] = relationship["toMany"]?.boolValue ?? false }
            }
            entities[name] = Entity(attributes: attributes, relationships: relationships)
            names.append(name)
        }
        self.entities = entities
        entityNames = names.sorted()
    }
}

/// One cluster for a flow's runs: a device per actor of the flow it started with, every user
/// the flow names, and the reset that makes each run independent of the ones before.
final class ExploreBench: Sendable {
    let cluster: MeowCluster
    let options: ExploreOptions
    let model: ModelInfo
    /// Store name → "private" / "shared".
    let storeScopes: [String: String]
    /// Each device's start-up user (a reset signs it back in as this user).
    let homeUsers: [String: String]
    /// A second connection per device for sends and fetches, so a held send leaves the actor's
    /// saves free to run (as an app saves while its container syncs).
    private let lanes: Mutex<[String: MeowDevice]>
    /// The request log's last sequence number seen, so each run reads only what is new.
    private let logSeq = Mutex(0)
    /// A cloud connection per user, for the final state.
    private let cloudUsers = Mutex<[String: MeowCloudUser]>([:])

    private init(cluster: MeowCluster, options: ExploreOptions, model: ModelInfo, storeScopes: [String: String], homeUsers: [String: String],
                 lanes: [String: MeowDevice]) {
        self.cluster = cluster
        self.options = options
        self.model = model
        self.storeScopes = storeScopes
        self.homeUsers = homeUsers
        self.lanes = Mutex(lanes)
    }

    static func start(flow: Flow, options: ExploreOptions, cluster index: Int?) async throws -> ExploreBench {
        var configuration = MeowClusterConfiguration(devices: flow.actors.map { MeowClusterConfiguration.Device(name: $0.device, user: $0.user) })
        configuration.cpu = index.flatMap(ClusterPlacement.cpu(forCluster:))
        configuration.persistence = options.persistence == .sqlite ? .sqlite : .inMemory
        configuration.syncMode = .manual
        configuration.modelFile = flow.model
        configuration.orphanRepair = flow.orphanRepair
        var users = Set(flow.actors.map(\.user))
        var extra: [String] = []
        func add(_ user: String) { if users.insert(user).inserted { extra.append(user) } }
        for share in flow.shares { share.participants.forEach { add($0.user) } }
        for actor in flow.actors {
            for step in actor.steps {
                switch step.kind {
                case let .accountSwitch(user), let .addParticipant(_, user, _), let .setPermission(_, user, _), let .removeParticipant(_, user): add(user)
                default: break
                }
            }
        }
        configuration.additionalUsers = extra
        let cluster = try await MeowCluster.start(configuration)
        do {
            guard let first = cluster.devices.first else {
                throw MeowCareError(.invalidArguments, "A flow needs at least one actor.", service: "explorer")
            }
            let model = ModelInfo(try await first.model())
            var scopes: [String: String] = [:]
            for store in try await first.stores() { scopes[store.name] = Self.scopeName(store) }
            var lanes: [String: MeowDevice] = [:]
            for device in cluster.devices { lanes[device.name] = try await device.newConnection() }
            return ExploreBench(cluster: cluster, options: options, model: model, storeScopes: scopes,
                                homeUsers: Dictionary(uniqueKeysWithValues: flow.actors.map { ($0.device, $0.user) }), lanes: lanes)
        } catch {
            await cluster.stop()
            throw error
        }
    }

    private static func scopeName(_ store: StoreDescription) -> String { store.scope.rawValue }

    func stop() async { await cluster.stop() }

    /// The shared store's name (a participant's objects live there).
    var sharedStoreName: String? { storeScopes.first { $0.value == "shared" }?.key }

    /// The request log's latest sequence number.
    func lastLogSeq() async throws(MeowCareError) -> Int {
        var seq = logSeq.withLock { $0 }
        for entry in try await cluster.cloud.admin.requestLog(after: seq) { seq = max(seq, entry["seq"]?.intValue ?? seq) }
        noteLogSeq(seq)
        return seq
    }

    func noteLogSeq(_ seq: Int) { logSeq.withLock { $0 = max($0, seq) } }

    func cloudUser(_ user: String) async throws(MeowCareError) -> MeowCloudUser {
        if let known = cloudUsers.withLock({ $0[user] }) { return known }
        let made = try await cluster.cloud.user(user)
        cloudUsers.withLock { $0[user] = made }
        return made
    }

    /// One run of `flow` (the bench's or a smaller one) from a fresh reset.
    func run(flow: Flow, mode: RunMode) async throws -> ([Choice], RunRecord) {
        try await RunEngine(bench: self, flow: flow, mode: mode).execute()
    }

    /// The device's sync connection.
    func lane(_ device: String) -> MeowDevice? { lanes.withLock { $0[device] } }

    /// After a restart the device has a new process: a new sync connection.
    func renewLane(_ device: String) async throws(MeowCareError) {
        let fresh = try await cluster.device(named: device).newConnection()
        lanes.withLock { $0[device] = fresh }
    }

    /// Everything as a fresh cluster has it, without starting processes: held requests let
    /// through, faults cleared, every device signed out (which clears its data, queues, tokens
    /// and share metadata) and in again as its own user, the cloud's data reset. Costs a few
    /// requests per device where a restart costs a process start per device.
    func reset() async throws(MeowCareError) {
        let admin = cluster.cloud.admin
        _ = try await admin.releaseHeldRequests()
        try await admin.clearFaults()
        for device in cluster.devices {
            if cluster.process(of: device.name)?.exitStatus != nil {
                try await cluster.addDevice(.init(name: device.name, user: homeUsers[device.name] ?? device.user))
                try await renewLane(device.name)
            }
        }
        for device in cluster.devices { _ = try await device.account.signOut() }
        _ = try await admin.reset(.all)
        for device in cluster.devices {
            let home = homeUsers[device.name] ?? device.user
            _ = try await device.account.signIn(credential: cluster.cloud.credentials[home])
        }
    }
}
