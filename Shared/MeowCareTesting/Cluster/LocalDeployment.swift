#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

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

/// Starts a cluster's services as child processes in a fresh short directory under /tmp:
/// the sync-service with the users and an admin credential made for it, and one
/// store-service per device mirroring to it — all at once (a device connects to the cloud
/// lazily), then waits until each answers `health` with ready.
struct LocalDeployment: Sendable {
    let directory: String
    let endpoints: ClusterEndpoints
    let processes: [ServiceProcess]

    static func start(_ configuration: MeowClusterConfiguration, lifecycle: ClusterLifecycle) async throws(MeowCareError)
        -> (LocalDeployment, [TracedConnection]) {
        let binaries = try ExecutableLocator.locate()
        let directory = try makeDirectory()
        var processes: [ServiceProcess] = []
        do throws(MeowCareError) {
            let credentials = Dictionary(uniqueKeysWithValues: configuration.users.map { ($0, randomSecret()) })
            let admin = randomSecret()
            let usersFile = "\(directory)/users.json"
            let users: JSONValue = ["users": .array(configuration.users.map { ["user": .string($0), "credential": .string(credentials[$0]!)] })]
            guard FileManager.default.createFile(atPath: usersFile, contents: Data(JSONWriter.text(users).utf8), attributes: [.posixPermissions: 0o600]) else {
                throw MeowCareError(.serviceDidNotStart, "Could not write \(usersFile).", service: "cluster")
            }
            let cloud = ServiceEndpoint(name: "cloud", socket: "\(directory)/c.sock", logPath: "\(directory)/cloud.log")
            let onDisk = configuration.persistence == .sqlite
            processes.append(try ServiceProcess(
                name: "cloud", executable: binaries.syncService,
                arguments: ["--socket", cloud.socket, "--users", usersFile] + (onDisk ? ["--data-dir", "\(directory)/cloud"] : ["--in-memory"])
                    + configuration.cloudArguments,
                environment: ["MEOW_ADMIN_CREDENTIAL": admin], logPath: cloud.logPath!))
            var devices: [ServiceEndpoint] = []
            for (index, device) in configuration.devices.enumerated() {
                let endpoint = ServiceEndpoint(name: device.name, socket: "\(directory)/d\(index).sock", user: device.user,
                                               credential: credentials[device.user], logPath: "\(directory)/device-\(index).log")
                var arguments = ["--socket", endpoint.socket, "--sync-socket", cloud.socket, "--device-name", device.name,
                                 "--sync-mode", configuration.syncMode.rawValue]
                arguments += onDisk ? ["--data-dir", "\(directory)/device-\(index)"] : ["--in-memory"]
                if !configuration.orphanRepair { arguments.append("--no-orphan-repair") }
                if let model = configuration.modelFile { arguments += ["--model", model] }
                processes.append(try ServiceProcess(name: device.name, executable: binaries.storeService,
                                                    arguments: arguments + configuration.deviceArguments,
                                                    environment: ["MEOW_SYNC_CREDENTIAL": endpoint.credential!], logPath: endpoint.logPath!))
                devices.append(endpoint)
            }
            let endpoints = ClusterEndpoints(cloud: cloud, adminCredential: admin, devices: devices, credentials: credentials)
            let deployment = LocalDeployment(directory: directory, endpoints: endpoints, processes: processes)
            let connections = try await deployment.waitUntilReady(timeout: configuration.startTimeout, lifecycle: lifecycle)
            return (deployment, connections)
        } catch {
            lifecycle.stop()
            await withTaskGroup(of: Void.self) { group in
                for process in processes { group.addTask { await process.stop(timeout: .seconds(5)) } }
            }
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Each service's first connection once it answers `health` ready: the cloud's as the
    /// admin, then one per device. A service that exits meanwhile, or is not ready in time,
    /// fails the start with its own log's last lines.
    private func waitUntilReady(timeout: Duration, lifecycle: ClusterLifecycle) async throws(MeowCareError) -> [TracedConnection] {
        let credentials: [String?] = [endpoints.adminCredential] + endpoints.devices.map { _ in nil }
        let endpoints = [self.endpoints.cloud] + self.endpoints.devices
        let processes = self.processes
        let outcomes = await withTaskGroup(of: (Int, Result<TracedConnection, MeowCareError>).self) { group in
            for index in endpoints.indices {
                group.addTask {
                    (index, await Self.readiness(endpoints[index], credential: credentials[index], process: processes[index],
                                                 timeout: timeout, lifecycle: lifecycle))
                }
            }
            var outcomes = [Result<TracedConnection, MeowCareError>?](repeating: nil, count: endpoints.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes
        }
        var connections: [TracedConnection] = []
        for outcome in outcomes {
            switch outcome {
            case let .success(connection)?: connections.append(connection)
            case let .failure(error)?: throw error
            case nil: throw MeowCareError(.internalError, "A service's readiness was never reported.", service: "cluster")
            }
        }
        return connections
    }

    private static func readiness(_ endpoint: ServiceEndpoint, credential: String?, process: ServiceProcess, timeout: Duration,
                                  lifecycle: ClusterLifecycle) async -> Result<TracedConnection, MeowCareError> {
        do throws(MeowCareError) {
            return .success(try await waitForHealth(endpoint, credential: credential, process: process, timeout: timeout, lifecycle: lifecycle))
        } catch {
            return .failure(error)
        }
    }

    private static func waitForHealth(_ endpoint: ServiceEndpoint, credential: String?, process: ServiceProcess, timeout: Duration,
                                      lifecycle: ClusterLifecycle) async throws(MeowCareError) -> TracedConnection {
        let deadline = ContinuousClock.now + timeout
        // A connect attempt on a missing socket costs microseconds, and a service is up within
        // tens of milliseconds: probing every 2 ms finds it ready without a backoff's overshoot.
        let pause = Duration.milliseconds(2)
        var lastProblem = "it did not create its socket"
        while true {
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
            try? await Task.sleep(for: pause)
        }
    }

    private static func startFailure(_ endpoint: ServiceEndpoint, process: ServiceProcess, reason: String) -> MeowCareError {
        let lines = process.logLines(limit: 40)
        return MeowCareError(.serviceDidNotStart,
                             "\(endpoint.name) (\(process.name == "cloud" ? "sync-service" : "store-service")) \(reason). Its log (\(endpoint.logPath ?? "?")):\n"
                                + (lines.isEmpty ? "(empty)" : lines.joined(separator: "\n")),
                             details: ["log": .array(lines.map { .string($0) })], service: endpoint.name)
    }

    /// SIGTERM to every service at once, then the directory is removed.
    func stop() async {
        await withTaskGroup(of: Void.self) { group in
            for process in processes { group.addTask { await process.stop() } }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A 0700 directory with a short path: socket paths must stay under 108 bytes.
    private static func makeDirectory() throws(MeowCareError) -> String {
        var template = Array("/tmp/mc.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw MeowCareError(.serviceDidNotStart, "mkdtemp(/tmp/mc.XXXXXX) failed: \(String(cString: strerror(errno))).", service: "cluster")
        }
        return String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    /// 32 hex digits (128 bits): the sync-service wants an admin credential of 16 characters or more.
    private static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
    }
}
