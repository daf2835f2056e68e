import Foundation

/// A running `deploy/meowcare-local` deployment a cluster uses instead of starting services
/// (`MEOWCARE_EXTERNAL=<its directory>`), so a person can watch a test with meowctl. The
/// deployment's layout is read as `up` wrote it: `config/credentials.json` (the admin's and
/// each user's credential), `config/<service>.conf` (`socket = …`, `device-name = …`,
/// `sync-credential = …`) and `logs/<service>.log`.
///
/// Each device the test asks for is the deployment's device of that name, or named
/// `device-<name>` (`A` is `device-a`), must belong to the user the test names and must run the
/// test's model (`modelFile`, or MeowCare's; `deploy/meowcare-local up --model PATH` runs
/// another). Nothing is started, reset or stopped: the test runs against the deployment's current data.
struct ExternalDeployment: Sendable {
    let directory: String
    let endpoints: ClusterEndpoints
    /// Service name → log file.
    let logs: [String: String]
    /// The name of the model the test expects its devices to run (nil: unknown, not checked).
    let expectedModel: String?

    init(directory: String, configuration: MeowClusterConfiguration) throws(MeowCareError) {
        self.directory = directory
        expectedModel = Self.modelName(of: configuration.modelFile)
        let config = "\(directory)/config"
        guard let data = FileManager.default.contents(atPath: "\(config)/credentials.json"),
              let credentials = (try? JSONParser.parse(Array(data)))?.objectValue?.compactMapValues(\.stringValue),
              let admin = credentials["admin"] else {
            throw Self.problem("\(config)/credentials.json is missing or unreadable. Is \(directory) a deploy/meowcare-local directory (`deploy/meowcare-local up --dir \(directory)`)?")
        }
        let userOfCredential = Dictionary(credentials.filter { $0.key != "admin" }.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        let files = (try? FileManager.default.contentsOfDirectory(atPath: config)) ?? []
        var services: [String: [String: String]] = [:]
        for file in files where file.hasSuffix(".conf") {
            guard let text = try? String(contentsOfFile: "\(config)/\(file)", encoding: .utf8) else { continue }
            services[String(file.dropLast(5))] = Self.options(text)
        }
        guard let cloudSocket = services["sync-service"]?["socket"] else { throw Self.problem("\(config)/sync-service.conf names no socket.") }
        let deviceServices = services.filter { $0.key != "sync-service" }
        var devices: [ServiceEndpoint] = []
        for wanted in configuration.devices {
            guard let (service, options) = deviceServices.first(where: { name, options in
                let deviceName = options["device-name"] ?? name
                return [deviceName.lowercased(), name.lowercased()].contains(wanted.name.lowercased())
                    || name.lowercased() == "device-\(wanted.name.lowercased())"
            }) else {
                throw Self.problem("The deployment in \(directory) has no device '\(wanted.name)'. Its devices: "
                                   + deviceServices.map { $0.value["device-name"] ?? $0.key }.sorted().joined(separator: ", ") + ".")
            }
            guard let socket = options["socket"], let credential = options["sync-credential"], let user = userOfCredential[credential] else {
                throw Self.problem("\(config)/\(service).conf lacks its socket or its user's credential.")
            }
            guard user == wanted.user else {
                throw Self.problem("Device '\(wanted.name)' of the deployment is \(user)'s, but the test asks for \(wanted.user)'s. In external mode use "
                                   + "the deployment's users (\(userOfCredential.values.sorted().joined(separator: ", "))).")
            }
            devices.append(ServiceEndpoint(name: wanted.name, socket: socket, user: user, credential: credential,
                                           logPath: "\(directory)/logs/\(service).log"))
        }
        endpoints = ClusterEndpoints(cloud: ServiceEndpoint(name: "cloud", socket: cloudSocket, logPath: "\(directory)/logs/sync-service.log"),
                                     adminCredential: admin, devices: devices,
                                     credentials: credentials.filter { $0.key != "admin" })
        logs = Dictionary(uniqueKeysWithValues: ([endpoints.cloud] + devices).compactMap { endpoint in endpoint.logPath.map { (endpoint.name, $0) } })
    }

    /// A model file's name as the store-service names it: a JSON model's `name`, an Xcode
    /// model's bundle name (a version inside a bundle: the bundle's); MeowCare's for none. Nil when the file cannot be read
    /// (the device's start would say why).
    static func modelName(of file: String?) -> String? {
        guard let file else { return "MeowCare" }
        let url = URL(fileURLWithPath: file)
        if url.pathExtension == "xcdatamodel", url.deletingLastPathComponent().pathExtension == "xcdatamodeld" {
            return url.deletingLastPathComponent().deletingPathExtension().lastPathComponent
        }
        if ["xcdatamodeld", "xcdatamodel"].contains(url.pathExtension) { return url.deletingPathExtension().lastPathComponent }
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        return (try? JSONParser.parse(Array(data)))?["name"]?.stringValue
    }

    /// `name = value` lines; `#` starts a comment line; a bare word is a flag.
    private static func options(_ text: String) -> [String: String] {
        var options: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            options[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return options
    }

    private static func problem(_ message: String) -> MeowCareError {
        MeowCareError(.invalidConfiguration, "MEOWCARE_EXTERNAL: " + message, service: "cluster")
    }

    /// The first connections: the cloud's as the admin, and one per device.
    func connect(lifecycle: ClusterLifecycle) async throws(MeowCareError) -> StartedServices {
        let cloud = try await TracedConnection.open(socket: endpoints.cloud.socket, service: "cloud", label: "cloud:admin",
                                                    credential: endpoints.adminCredential, lifecycle: lifecycle)
        var devices: [StartedDevice] = []
        for device in endpoints.devices {
            let connection = try await TracedConnection.open(socket: device.socket, service: device.name, label: device.name, lifecycle: lifecycle)
            let running = try await connection.call("model.get")["name"]?.stringValue
            if let expectedModel, let running, running != expectedModel {
                throw Self.problem("Device '\(device.name)' of the deployment runs the model '\(running)', but the test's model is '\(expectedModel)'. "
                                   + "Run the test with the deployment's model (modelFile), or start the deployment on the test's: "
                                   + "deploy/meowcare-local up --dir \(directory) --model PATH.")
            }
            devices.append(StartedDevice(endpoint: device, connection: connection, process: nil))
        }
        return StartedServices(cloud: cloud, devices: devices)
    }
}
