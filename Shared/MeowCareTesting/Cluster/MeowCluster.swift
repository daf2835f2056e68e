import Foundation
import Synchronization

/// An isolated cloud and N devices for one test: a sync-service with users made for it, and a
/// store-service per device mirroring to it as its user, each on its own socket in a short temp
/// directory of its own. `stop()` ends them all; the Swift Testing trait (`.meowCluster`) and
/// `withMeowCluster` call it when the test ends, however it ends.
///
/// ```swift
/// let cluster = try await MeowCluster.start(MeowClusterConfiguration(devices: ["A": "olivia", "P": "pablo"]))
/// let session = try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
/// try await cluster.settle()
/// await cluster.stop()
/// ```
public final class MeowCluster: Sendable {
    public let configuration: MeowClusterConfiguration
    /// The cluster's directory (sockets, logs, SQLite files); the deployment's in external mode.
    public let directory: String
    /// Whether the cluster uses a running deployment (`MEOWCARE_EXTERNAL`) rather than its own services.
    public let isExternal: Bool
    let lifecycle: ClusterLifecycle
    private let local: LocalDeployment?
    /// The cloud, the devices (in the configuration's order, then as added) and each service's log file.
    private let state: Mutex<(cloud: MeowCloud, devices: [MeowDevice], logFiles: [(service: String, path: String)])>

    /// The cluster of the running test (the `.meowCluster` trait's, or `withMeowCluster`'s).
    @TaskLocal static var scoped: MeowCluster?

    /// The cluster of the current test: set by the `.meowCluster` trait and inside `withMeowCluster`.
    public static var current: MeowCluster {
        get throws(MeowCareError) {
            guard let cluster = scoped else {
                throw MeowCareError(.invalidConfiguration, "MeowCluster.current is set only in a test with the .meowCluster(…) trait "
                                    + "or inside withMeowCluster { … }.", service: "cluster")
            }
            return cluster
        }
    }

    /// Runs `body` with `cluster` as `MeowCluster.current`.
    public static func withCurrent<T>(_ cluster: MeowCluster, _ body: () async throws -> T) async rethrows -> T {
        try await $scoped.withValue(cluster) { try await body() }
    }

    private init(configuration: MeowClusterConfiguration, devices: [MeowDevice], cloud: MeowCloud, directory: String, isExternal: Bool,
                 lifecycle: ClusterLifecycle, local: LocalDeployment?, logFiles: [(service: String, path: String)]) {
        self.configuration = configuration
        self.directory = directory
        self.isExternal = isExternal
        self.lifecycle = lifecycle
        self.local = local
        state = Mutex((cloud, devices, logFiles))
    }

    /// Starts the services (or connects to `configuration.externalDeployment`) and returns once
    /// every one answers `health` ready. A service that cannot start fails this with its own log lines.
    public static func start(_ configuration: MeowClusterConfiguration) async throws(MeowCareError) -> MeowCluster {
        try configuration.validate()
        let lifecycle = ClusterLifecycle()
        let endpoints: ClusterEndpoints, started: StartedServices, local: LocalDeployment?, directory: String
        if let external = configuration.externalDeployment {
            let deployment = try ExternalDeployment(directory: external, configuration: configuration)
            do throws(MeowCareError) { started = try await deployment.connect(lifecycle: lifecycle) } catch {
                lifecycle.stop()
                throw error
            }
            (endpoints, local, directory) = (deployment.endpoints, nil, external)
        } else {
            let deployment: LocalDeployment
            (deployment, started) = try await LocalDeployment.start(configuration, lifecycle: lifecycle)
            (endpoints, local, directory) = (deployment.endpoints, deployment, deployment.directory)
        }
        lifecycle.trace.keepSecret(endpoints.adminCredential)
        endpoints.credentials.values.forEach(lifecycle.trace.keepSecret)
        let cloud = MeowCloud(socketPath: endpoints.cloud.socket, admin: MeowCloudAdmin(connection: started.cloud),
                              credentials: endpoints.credentials, adminCredential: endpoints.adminCredential, lifecycle: lifecycle)
        let devices = started.devices.map { Self.device($0, lifecycle: lifecycle) }
        let logs = ([endpoints.cloud] + started.devices.map(\.endpoint)).compactMap { endpoint in endpoint.logPath.map { (service: endpoint.name, path: $0) } }
        return MeowCluster(configuration: configuration, devices: devices, cloud: cloud, directory: directory, isExternal: local == nil,
                           lifecycle: lifecycle, local: local, logFiles: logs)
    }

    private static func device(_ started: StartedDevice, lifecycle: ClusterLifecycle) -> MeowDevice {
        MeowDevice(name: started.endpoint.name, user: started.endpoint.user ?? "", socketPath: started.endpoint.socket, connection: started.connection,
                   lifecycle: lifecycle)
    }

    /// The cloud: its latest start's clients.
    public var cloud: MeowCloud { state.withLock { $0.cloud } }

    /// The devices: the configuration's, in its order, then those added.
    public var devices: [MeowDevice] { state.withLock { $0.devices } }

    /// Starts a device the configuration did not have (its user must be one of the cloud's:
    /// a device's or one of `additionalUsers`), or starts again one whose process has ended —
    /// on the same socket and, with `.sqlite`, the same data — and returns once it is ready.
    /// The new `MeowDevice` takes the old one's place in `devices`. Not in external mode.
    @discardableResult
    public func addDevice(_ device: MeowClusterConfiguration.Device) async throws(MeowCareError) -> MeowDevice {
        guard let local else {
            throw MeowCareError(.invalidConfiguration, "An external deployment's devices are its own: a test cannot add '\(device.name)'.", service: "cluster")
        }
        if lifecycle.isStopped { throw lifecycle.stoppedError(op: nil, service: "cluster") }
        let started = try await local.add(device, lifecycle: lifecycle)
        let added = Self.device(started, lifecycle: lifecycle)
        state.withLock { state in
            if let index = state.devices.firstIndex(where: { $0.name == device.name }) {
                state.devices[index] = added
            } else {
                state.devices.append(added)
                if let log = started.endpoint.logPath { state.logFiles.append((device.name, log)) }
            }
        }
        return added
    }

    /// The executables the services were started from, and which rule found them. nil in external mode.
    public var executables: ExecutableLocator? { local?.binaries }

    /// The cloud's process: stop it, kill it (`kill -9`), read its log lines, see its exit
    /// status. nil in external mode.
    public var cloudProcess: MeowProcess? { local?.cloudProcess }

    /// Starts the cloud again once its process has ended (stopped or killed): the same socket
    /// and users and, with `.sqlite`, the same data, with `environment` over `cloudEnvironment`
    /// for this start (e.g. a crash point to arm); returns the new `MeowCloud` (also `cloud`
    /// from now on) once it is ready. Devices reconnect by themselves. Not in external mode.
    @discardableResult
    public func restartCloud(environment: [String: String] = [:]) async throws(MeowCareError) -> MeowCloud {
        guard let local else {
            throw MeowCareError(.invalidConfiguration, "An external deployment's cloud is its own: a test cannot start it again.", service: "cluster")
        }
        if lifecycle.isStopped { throw lifecycle.stoppedError(op: nil, service: "cluster") }
        let admin = try await local.restartCloud(environment: environment, lifecycle: lifecycle)
        return state.withLock { state in
            let old = state.cloud
            state.cloud = MeowCloud(socketPath: old.socketPath, admin: MeowCloudAdmin(connection: admin), credentials: old.credentials,
                                    adminCredential: old.adminCredential, lifecycle: lifecycle)
            return state.cloud
        }
    }

    /// The process of the device named `name` (its latest start); nil in external mode.
    public func process(of name: String) -> MeowProcess? { local?.process(of: name) }

    /// The device named `name`; a name the configuration does not have stops the test with the names it has.
    public subscript(name: String) -> MeowDevice {
        guard let device = devices.first(where: { $0.name == name }) else {
            preconditionFailure("The cluster has no device '\(name)'; its devices: \(devices.map(\.name).joined(separator: ", ")).")
        }
        return device
    }

    /// The device named `name`, or an error naming the devices there are.
    public func device(named name: String) throws(MeowCareError) -> MeowDevice {
        guard let device = devices.first(where: { $0.name == name }) else {
            throw MeowCareError(.invalidConfiguration, "The cluster has no device '\(name)'; its devices: \(devices.map(\.name).joined(separator: ", ")).",
                                service: "cluster")
        }
        return device
    }

    /// The users of the devices, each once.
    public var users: [String] {
        var seen: Set<String> = []
        return devices.map(\.user).filter { seen.insert($0).inserted }
    }

    /// Every frame the cluster's clients sent and received.
    public var trace: FrameTrace { lifecycle.trace }

    public var isStopped: Bool { lifecycle.isStopped }

    /// Closes every client and stops every service this cluster started (SIGTERM, then SIGKILL
    /// after 10 s), then removes its directory. In external mode only the clients are closed.
    /// Clients used afterwards fail with `clusterStopped`. Calling it again does nothing.
    public func stop() async {
        let first = !lifecycle.isStopped
        lifecycle.stop()
        if first { await local?.stop() }
    }

    /// Each service's log (one JSON object per line), its last `limit` lines: `cloud` first,
    /// then the devices by name.
    public func logs(limit: Int = 5_000) -> [(service: String, text: String)] {
        state.withLock { $0.logFiles }.map { entry in
            let text = (try? String(contentsOfFile: entry.path, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
            return (entry.service, lines.suffix(limit).joined(separator: "\n"))
        }
    }

    /// Sets every clock — the cloud's (`admin.setClock`) and each device's (`clock.set`) — to
    /// `seconds` later than it is, so retry-after waits and expiries pass at once.
    public func advanceClocks(by seconds: Double) async throws(MeowCareError) {
        _ = try await cloud.admin.advanceClock(by: seconds)
        for device in devices { _ = try await device.advanceClock(by: seconds) }
    }
}
