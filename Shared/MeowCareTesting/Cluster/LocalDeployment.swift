#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Where one service of a cluster listens and how a client logs in to it.
struct ServiceEndpoint: Sendable {
    var name: String
    var socket: String
    /// Devices: the cloud user's name and credential.
    var user: String?
    var credential: String?
    var logPath: String?
}

/// The services a cluster reaches, however they were started.
struct ClusterEndpoints: Sendable {
    var cloud: ServiceEndpoint
    var adminCredential: String
    var devices: [ServiceEndpoint]
    /// Every user's credential, for cloud clients acting as that user.
    var credentials: [String: String]
}

/// A started device: where it listens, its first connection, its process (nil in external mode).
struct StartedDevice: Sendable {
    var endpoint: ServiceEndpoint
    var connection: TracedConnection
    var process: MeowProcess?
}

/// A cluster's services once ready: the cloud's connection as the admin, then the devices.
struct StartedServices: Sendable {
    var cloud: TracedConnection
    var devices: [StartedDevice]
}

/// Starts a cluster's services as child processes in a short directory under /tmp (a fresh
/// one, or the configuration's): the sync-service with the users and an admin credential made
/// for it, and one store-service per device mirroring to it — all at once (a device connects
/// to the cloud lazily), then waits until each answers `health` with ready. Devices added later
/// start the same way.
final class LocalDeployment: Sendable {
    let directory: String
    let endpoints: ClusterEndpoints
    /// The cloud's process (its latest start).
    private let cloud = Mutex<MeowProcess?>(nil)
    private let ownsDirectory: Bool
    /// Where the services were started from.
    let binaries: ExecutableLocator
    private let configuration: MeowClusterConfiguration
    /// Every device process by device name, and the slot (socket, log, data) each name has.
    private let devices = Mutex<(processes: [String: MeowProcess], slots: [String: Int])>(([:], [:]))

    private init(directory: String, ownsDirectory: Bool, endpoints: ClusterEndpoints, binaries: ExecutableLocator,
                 configuration: MeowClusterConfiguration) {
        self.directory = directory
        self.ownsDirectory = ownsDirectory
        self.endpoints = endpoints
        self.binaries = binaries
        self.configuration = configuration
    }

    /// The started deployment, and each service's first connection: the cloud's as the admin, and one per device.
    static func start(_ configuration: MeowClusterConfiguration, lifecycle: ClusterLifecycle) async throws(MeowCareError)
        -> (LocalDeployment, StartedServices) {
        let binaries: ExecutableLocator
        if let chosen = configuration.executables { binaries = chosen } else { binaries = try ExecutableLocator.locate() }
        binaries.announce()
        let directory: String
        if let own = configuration.directory { directory = own } else { directory = try makeDirectory(in: ClusterDirectoryParent.choose(for: configuration)) }
        var deployment: LocalDeployment?
        do throws(MeowCareError) {
            let credentials = Dictionary(uniqueKeysWithValues: configuration.users.map { ($0, configuration.credentials[$0] ?? randomSecret()) })
            let admin = configuration.adminCredential ?? randomSecret()
            let usersFile = "\(directory)/users.json"
            let users: JSONValue = ["users": .array(configuration.users.map { ["user": .string($0), "credential": .string(credentials[$0]!)] })]
            try writePrivateFile(usersFile, JSONWriter.text(users))
            let cloud = ServiceEndpoint(name: "cloud", socket: "\(directory)/c.sock", logPath: "\(directory)/cloud.log")
            let endpoints = ClusterEndpoints(cloud: cloud, adminCredential: admin, devices: [], credentials: credentials)
            let started = LocalDeployment(directory: directory, ownsDirectory: configuration.directory == nil, endpoints: endpoints,
                                          binaries: binaries, configuration: configuration)
            deployment = started
            return (started, try await started.startServices(lifecycle: lifecycle))
        } catch {
            lifecycle.stop()
            await deployment?.stop()
            if configuration.directory == nil { try? FileManager.default.removeItem(atPath: directory) }
            throw error
        }
    }

    /// The cloud's process, from its latest start.
    var cloudProcess: MeowProcess? { cloud.withLock { $0 } }

    /// Spawns the sync-service (the users file is written already), `environment` over the configuration's.
    private func launchCloud(environment: [String: String] = [:]) throws(MeowCareError) -> MeowProcess {
        let onDisk = configuration.persistence == .sqlite
        let process = try MeowProcess(
            binaries.syncService, ["--socket", endpoints.cloud.socket, "--users", "\(directory)/users.json"]
                + (onDisk ? ["--data-dir", "\(directory)/cloud"] : ["--in-memory"]) + configuration.cloudArguments,
            environment: configuration.cloudEnvironment.merging(environment) { _, new in new }
                .merging(["MEOW_ADMIN_CREDENTIAL": endpoints.adminCredential]) { _, new in new },
            name: "cloud", logPath: endpoints.cloud.logPath!, cpu: configuration.cpu)
        cloud.withLock { $0 = process }
        return process
    }

    /// Starts the cloud again once its process has ended (same socket and users; with
    /// `.sqlite`, the same data) and returns the admin's connection once it is ready.
    func restartCloud(environment: [String: String], lifecycle: ClusterLifecycle) async throws(MeowCareError) -> TracedConnection {
        if cloudProcess?.isRunning == true {
            throw MeowCareError(.invalidConfiguration, "The cloud is running; stop or kill its process before starting it again.", service: "cluster")
        }
        let process = try launchCloud(environment: environment)
        return try await Self.waitForHealth(endpoints.cloud, credential: endpoints.adminCredential, process: process, timeout: configuration.startTimeout,
                                            lifecycle: lifecycle)
    }

    /// Spawns the cloud and then the configuration's devices while it starts, then waits for them all.
    private func startServices(lifecycle: ClusterLifecycle) async throws(MeowCareError) -> StartedServices {
        let process = try launchCloud()
        let cloud = endpoints.cloud, admin = endpoints.adminCredential, timeout = configuration.startTimeout
        async let cloudConnection = Self.readiness(cloud, credential: admin, process: process, timeout: timeout, lifecycle: lifecycle)
        var started: [(ServiceEndpoint, MeowProcess)] = []
        do throws(MeowCareError) {
            for device in configuration.devices { started.append(try launch(device)) }
        } catch {
            _ = await cloudConnection
            throw error
        }
        let devices = try await waitUntilReady(started, lifecycle: lifecycle)
        return StartedServices(cloud: try await cloudConnection.get(), devices: devices)
    }

    /// Starts one more device (or again, one whose process has ended: same socket, log and
    /// data slot) and waits until it is ready.
    func add(_ device: MeowClusterConfiguration.Device, lifecycle: ClusterLifecycle) async throws(MeowCareError) -> StartedDevice {
        let (endpoint, process) = try launch(device)
        let connection = try await Self.waitForHealth(endpoint, credential: nil, process: process, timeout: configuration.startTimeout, lifecycle: lifecycle)
        return StartedDevice(endpoint: endpoint, connection: connection, process: process)
    }

    /// The latest process of the device named `name`.
    func process(of name: String) -> MeowProcess? { devices.withLock { $0.processes[name] } }

    /// Spawns a device's store-service without waiting for it.
    private func launch(_ device: MeowClusterConfiguration.Device) throws(MeowCareError) -> (ServiceEndpoint, MeowProcess) {
        guard let credential = endpoints.credentials[device.user] else {
            throw MeowCareError(.invalidConfiguration, "The cloud has no user '\(device.user)' for device '\(device.name)'; its users: "
                                + "\(endpoints.credentials.keys.sorted().joined(separator: ", ")). Name it in `additionalUsers`.", service: "cluster")
        }
        let index = try devices.withLock { state throws(MeowCareError) -> Int in
            if let running = state.processes[device.name], running.isRunning {
                throw MeowCareError(.invalidConfiguration, "Device '\(device.name)' is running already; stop it before starting it again.", service: "cluster")
            }
            if let index = state.slots[device.name] { return index }
            // A directory of the caller's may hold an earlier cluster's devices: never take their files.
            var index = (state.slots.values.max() ?? -1) + 1
            while ["d\(index).sock", "device-\(index).log"].contains(where: { FileManager.default.fileExists(atPath: "\(directory)/\($0)") }) { index += 1 }
            state.slots[device.name] = index
            return index
        }
        let endpoint = ServiceEndpoint(name: device.name, socket: "\(directory)/d\(index).sock", user: device.user, credential: credential,
                                       logPath: "\(directory)/device-\(index).log")
        var arguments = ["--socket", endpoint.socket, "--sync-socket", device.syncSocket ?? endpoints.cloud.socket, "--device-name", device.name]
        // Manual is the store-service's default: named only when automatic, so a device's own
        // `arguments` may choose its mode.
        if configuration.syncMode == .automatic { arguments += ["--sync-mode", "automatic"] }
        switch device.persistence ?? configuration.persistence {
        case .sqlite: arguments += ["--data-dir", device.dataDirectory ?? "\(directory)/device-\(index)"]
        case .inMemory: arguments.append("--in-memory")
        }
        if !(device.orphanRepair ?? configuration.orphanRepair) { arguments.append("--no-orphan-repair") }
        if let model = configuration.modelFile { arguments += ["--model", model] }
        let process = try MeowProcess(binaries.storeService, arguments + configuration.deviceArguments + device.arguments,
                                      environment: device.environment.merging(["MEOW_SYNC_CREDENTIAL": credential]) { _, new in new },
                                      name: device.name, logPath: endpoint.logPath!, cpu: configuration.cpu)
        devices.withLock { $0.processes[device.name] = process }
        return (endpoint, process)
    }

    /// Each device's first connection once it answers `health` ready.
    private func waitUntilReady(_ started: [(ServiceEndpoint, MeowProcess)], lifecycle: ClusterLifecycle) async throws(MeowCareError) -> [StartedDevice] {
        let timeout = configuration.startTimeout
        let outcomes = await withTaskGroup(of: (Int, Result<TracedConnection, MeowCareError>).self) { group in
            for (index, (endpoint, process)) in started.enumerated() {
                group.addTask { (index, await Self.readiness(endpoint, credential: nil, process: process, timeout: timeout, lifecycle: lifecycle)) }
            }
            var outcomes = [Result<TracedConnection, MeowCareError>?](repeating: nil, count: started.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes
        }
        var devices: [StartedDevice] = []
        for (outcome, (endpoint, process)) in zip(outcomes, started) {
            switch outcome {
            case let .success(connection)?: devices.append(StartedDevice(endpoint: endpoint, connection: connection, process: process))
            case let .failure(error)?: throw error
            case nil: throw MeowCareError(.internalError, "A service's readiness was never reported.", service: "cluster")
            }
        }
        return devices
    }

    private static func readiness(_ endpoint: ServiceEndpoint, credential: String?, process: MeowProcess, timeout: Duration,
                                  lifecycle: ClusterLifecycle) async -> Result<TracedConnection, MeowCareError> {
        do throws(MeowCareError) {
            return .success(try await waitForHealth(endpoint, credential: credential, process: process, timeout: timeout, lifecycle: lifecycle))
        } catch {
            return .failure(error)
        }
    }

    /// A service's first connection once it answers `health` ready; a service that exits
    /// meanwhile, or is not ready in time, fails the start with its own log's last lines.
    private static func waitForHealth(_ endpoint: ServiceEndpoint, credential: String?, process: MeowProcess, timeout: Duration,
                                      lifecycle: ClusterLifecycle) async throws(MeowCareError) -> TracedConnection {
        let deadline = ContinuousClock.now + timeout
        // A service logs `ready` once it listens: the probe runs again at each line it logs,
        // and every 2 ms besides (a service may log nothing at its level), so it finds the
        // service ready as soon as it says so, without a backoff's overshoot.
        let pause = Duration.milliseconds(2)
        var lastProblem = "it did not create its socket"
        while true {
            let linesSeen = process.lineCount
            if let status = process.exitStatus {
                throw startFailure(endpoint, process: process, reason: "exited with status \(status) during start-up")
            }
            if ContinuousClock.now >= deadline {
                throw startFailure(endpoint, process: process, reason: "was not ready within \(timeout) (\(lastProblem))")
            }
            do throws(MeowCareError) {
                let connection = try await TracedConnection.open(socket: endpoint.socket, service: endpoint.name, label: credential == nil ? endpoint.name : "\(endpoint.name):admin",
                                                                 credential: credential, lifecycle: lifecycle)
                let health = try await connection.call("health")
                if health["ready"] == true { return connection }
                lastProblem = "health: \(JSONWriter.text(health["checks"] ?? .null))"
                connection.close()
            } catch {
                if error.code == .clusterStopped { throw error }
                lastProblem = "\(error.code): \(error.message)"
            }
            await process.awaitLine(after: linesSeen, within: pause)
        }
    }

    private static func startFailure(_ endpoint: ServiceEndpoint, process: MeowProcess, reason: String) -> MeowCareError {
        let lines = Array(process.lines.suffix(40))
        return MeowCareError(.serviceDidNotStart,
                             "\(endpoint.name) (\(process.name == "cloud" ? "sync-service" : "store-service")) \(reason). Its log (\(endpoint.logPath ?? "?")):\n"
                                + (lines.isEmpty ? "(empty)" : lines.joined(separator: "\n")),
                             details: ["log": .array(lines.map { .string($0) })], service: endpoint.name)
    }

    /// SIGTERM to every service at once, then the directory is removed (unless it is the configuration's).
    func stop() async {
        await Self.stopAll((cloudProcess.map { [$0] } ?? []) + devices.withLock { Array($0.processes.values) })
        if ownsDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    private static func stopAll(_ processes: [MeowProcess]) async {
        await withTaskGroup(of: Void.self) { group in
            for process in processes { group.addTask { await process.stop(timeout: .seconds(10)) } }
        }
    }

    /// Writes `text` to a 0600 file at `path` (replacing one there). Plainly, not atomically and
    /// without an fsync (FileManager's way, a millisecond at each start): the file lives in the
    /// cluster's own directory for the cloud it is written for, and is read by it at its start.
    private static func writePrivateFile(_ path: String, _ text: String) throws(MeowCareError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0, fchmod(descriptor, 0o600) == 0 else {
            let reason = String(cString: strerror(errno))
            if descriptor >= 0 { close(descriptor) }
            throw MeowCareError(.serviceDidNotStart, "Could not write \(path): \(reason).", service: "cluster")
        }
        defer { close(descriptor) }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                throw MeowCareError(.serviceDidNotStart, "Could not write \(path): \(String(cString: strerror(errno))).", service: "cluster")
            }
            bytes = bytes.dropFirst(written)
        }
    }

    /// A 0700 directory with a short path under `parent`: socket paths must stay under 108 bytes.
    private static func makeDirectory(in parent: String) throws(MeowCareError) -> String {
        var template = Array("\(parent)/mc.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw MeowCareError(.serviceDidNotStart, "mkdtemp(\(parent)/mc.XXXXXX) failed: \(String(cString: strerror(errno))).", service: "cluster")
        }
        return String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    /// 32 hex digits (128 bits): the sync-service wants an admin credential of 16 characters or more.
    private static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        // Foundation's `String(format:)` cost a fixture's start a tenth of a millisecond.
        return (0..<2).map { _ in
            let digits = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }
}
