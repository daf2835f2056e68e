import Foundation

/// What a cluster is made of: the devices (each a store-service mirroring as one user), how
/// they store data and sync, and the options passed through to the services.
///
/// ```swift
/// var configuration = MeowClusterConfiguration(devices: ["A": "olivia", "B": "olivia", "P": "pablo"])
/// configuration.persistence = .sqlite
/// let cluster = try await MeowCluster.start(configuration)
/// ```
public struct MeowClusterConfiguration: Sendable {
    /// One device: its name (also its `--device-name`), its cloud user, and what it has of its
    /// own besides the cluster's settings.
    public struct Device: Sendable, Hashable {
        public var name: String
        public var user: String
        /// More options for this store-service, after the cluster's `deviceArguments` (e.g. its own `--model`).
        public var arguments: [String]
        /// More environment variables for this store-service.
        public var environment: [String: String]
        /// This device's persistence; nil: the cluster's.
        public var persistence: Persistence?
        /// With `.sqlite`, where its stores live; nil: `device-N` in the cluster's directory. A
        /// device started again on the same directory finds its data.
        public var dataDirectory: String?
        /// Whether it runs the start-up orphan repair; nil: the cluster's `orphanRepair`.
        public var orphanRepair: Bool?
        /// Where it reaches the cloud, when not at the cloud's socket (a `meowctl tap` in between).
        public var syncSocket: String?

        public init(name: String, user: String, arguments: [String] = [], environment: [String: String] = [:], persistence: Persistence? = nil,
                    dataDirectory: String? = nil, orphanRepair: Bool? = nil, syncSocket: String? = nil) {
            self.name = name
            self.user = user
            self.arguments = arguments
            self.environment = environment
            self.persistence = persistence
            self.dataDirectory = dataDirectory
            self.orphanRepair = orphanRepair
            self.syncSocket = syncSocket
        }
    }

    public enum Persistence: Sendable, Hashable {
        /// Nothing touches the disk (the default: fastest, and nothing to clean up).
        case inMemory
        /// SQLite files under the cluster's directory, as on a device.
        case sqlite
    }

    public enum SyncMode: String, Sendable, Hashable {
        /// Devices reach the cloud only when asked (`sync.*`, `settle()`): tests are deterministic.
        case manual
        /// Devices also send after each save and fetch on the cloud's pushes, as an app does.
        case automatic
    }

    public var devices: [Device]
    public var persistence: Persistence = .inMemory
    public var syncMode: SyncMode = .manual
    /// A data model file (`store-service --model`); nil: the embedded MeowCare model.
    public var modelFile: String?
    /// Run the start-up orphan repair, which creates the model's default parent on every device.
    /// Off by default, so a device's stores hold only what the test made.
    public var orphanRepair = false
    /// More options for every store-service (e.g. `["--conflict-policy", "serverWins"]`).
    public var deviceArguments: [String] = []
    /// More options for the sync-service (e.g. `["--max-items", "50"]`).
    public var cloudArguments: [String] = []
    /// More environment variables for the sync-service.
    public var cloudEnvironment: [String: String] = [:]
    /// Users the cloud knows besides the devices' (for devices added later, or cloud clients).
    public var additionalUsers: [String] = []
    /// Fixed credentials by user (a command a person pastes names them); every other user gets a random one.
    public var credentials: [String: String] = [:]
    /// A fixed admin credential; nil: a random one.
    public var adminCredential: String?
    /// A directory of your own to hold the cluster (sockets, logs, SQLite files), kept at stop:
    /// a later cluster on it finds the cloud's data. nil: a fresh one, removed at stop.
    public var directory: String?
    /// How long each service may take to answer `health` with ready.
    public var startTimeout: Duration = .seconds(30)
    /// Runs every service of the cluster on this one CPU (nil: wherever the kernel puts them). A
    /// cluster driven one request at a time gains nothing from a second core and pays for waking
    /// one on every request; clusters run side by side go on different CPUs.
    public var cpu: Int?
    /// The store-service and sync-service to start; nil: `ExecutableLocator.locate()`'s.
    public var executables: ExecutableLocator?
    /// A running `deploy/meowcare-local` deployment's directory to use instead of starting
    /// services; defaults to `$MEOWCARE_EXTERNAL` (see `ExternalDeployment`).
    public var externalDeployment: String? = ProcessInfo.processInfo.environment["MEOWCARE_EXTERNAL"].flatMap { $0.isEmpty ? nil : $0 }

    public init(devices: [Device]) {
        self.devices = devices
    }

    /// Devices and their users, in order: `["A": "olivia", "P": "pablo"]`.
    public init(devices: KeyValuePairs<String, String>) {
        self.devices = devices.map { Device(name: $0.key, user: $0.value) }
    }

    /// Devices of one user (several devices of one account).
    public init(devices: [String], user: String = "owner") {
        self.devices = devices.map { Device(name: $0, user: user) }
    }

    /// The cloud's users: the devices', then `additionalUsers`, each once, in order of first appearance.
    public var users: [String] {
        var seen: Set<String> = []
        return (devices.map(\.user) + additionalUsers).filter { seen.insert($0).inserted }
    }

    func validate() throws(MeowCareError) {
        let names = devices.map(\.name)
        if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            throw MeowCareError(.invalidConfiguration, "The device name '\(repeated)' is used twice; each device needs its own name.", service: "cluster")
        }
        for user in users where user.isEmpty || user.hasPrefix("_") || user.contains("/") {
            throw MeowCareError(.invalidConfiguration, "'\(user)' cannot be a cloud user's name: it must be non-empty, not start with '_' and not contain '/'.",
                                service: "cluster")
        }
    }
}
