#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import StoreWire

/// Chapter 11: the schema's life. A newer app version adds an attribute (CareEvent.mood). Its
/// development build syncs the field (development learns it on save); the App Store build, in
/// production, has each mood-carrying event refused until the schema is deployed, while the
/// rest of its changes sync; after the deploy it syncs. Both builds are store-services the
/// chapter starts beside the deployment (in memory) and stops again.
struct SchemaChapter {
    let deployment: Deployment
    let transcript: DemoTranscript

    func tell() async {
        await transcript.run("11. A newer app version adds CareEvent.mood: development learns it, production refuses it until the schema is deployed") {
            try await schemaLife()
        }
    }

    private func schemaLife() async throws {
        let cloud = try await deployment.connect("sync-service", as: "admin")
        defer { cloud.close() }
        let deviceA = try await Device(deployment, "device-a")
        let model = try await newerModel(from: deviceA)
        deviceA.client.close()
        let released = try await cloud.call("admin.deploySchema", [:])
        transcript.say("the App Store release: admin.deploySchema → \(released["deployed"]?.arrayValue?.count ?? 0) field(s) deployed to production")
        let xcode = try await ExtraDevice.start(deployment, name: "device-x", environment: "development", model: model)
        defer { xcode.stop() }
        let store = try await ExtraDevice.start(deployment, name: "device-n", environment: "production", model: model)
        defer { store.stop() }

        let context = try await store.device.openContext()
        _ = try await store.device.insert(context, "CareEvent", event("mood-1", mood: "sleepy"))
        _ = try await store.device.insert(context, "CareEvent", event("plain-1", mood: nil))
        _ = try await store.device.save(context)
        let refused = try await store.device.read("sync.send", as: SyncSendResult.self)
        transcript.say("App Store build (production): sync.send → saved \(refused.saved), refused \(refused.refused)")
        let waiting = try await store.device.status().stores.flatMap(\.refusedExports)
        transcript.say("refused: \(waiting.first?.message ?? "nothing")")
        transcript.check(refused.saved == 1 && refused.refused == 1 && waiting.first?.field == "CD_mood",
                         "production refuses the event carrying the undeployed field CD_mood; the other event is exported")

        let devContext = try await xcode.device.openContext()
        _ = try await xcode.device.insert(devContext, "CareEvent", event("mood-dev", mood: "playful"))
        _ = try await xcode.device.save(devContext)
        let learned = try await xcode.device.read("sync.send", as: SyncSendResult.self)
        let diff = try await cloud.call("admin.diffSchema", [:])
        let added = (diff["added"]?.arrayValue ?? []).compactMap { $0["field"]?.stringValue }
        transcript.check(learned.saved == 1 && added == ["CD_mood"],
                         "the development build's event syncs; development learned CD_mood, which production lacks (admin.diffSchema adds \(added))")

        let deployed = try await cloud.call("admin.deploySchema", [:])
        transcript.say("meowctl schema deploy: admin.deploySchema → \((deployed["deployed"]?.arrayValue ?? []).compactMap { $0["field"]?.stringValue })")
        let after = try await store.device.read("sync.send", as: SyncSendResult.self)
        let pending = try await store.device.pendingCount()
        transcript.check(after.saved == 1 && after.refused == 0 && pending == 0,
                         "after the deploy the App Store build's waiting event syncs to production; nothing is left pending")
    }

    private func event(_ id: String, mood: String?) -> [String: JSONValue] {
        var values: [String: JSONValue] = ["id": .string(id), "eventTypeRaw": "note", "occurredAt": "2026-12-01T08:00:00Z",
                                           "updatedAt": "2026-12-01T08:00:00Z"]
        if let mood { values["mood"] = .string(mood) }
        return values
    }

    /// Device A's model with CareEvent's new optional attribute `mood`, written into the deployment's directory.
    private func newerModel(from device: Device) async throws -> String {
        guard case var .object(model) = try await device.client.call("model.get", [:]), case var .array(entities) = model["entities"] else {
            throw DemoError("device A's model.get did not answer a model")
        }
        for (index, entity) in entities.enumerated() where entity["name"] == "CareEvent" {
            guard case var .object(members) = entity, case var .array(attributes) = members["attributes"] else { continue }
            attributes.append(["name": "mood", "type": "string", "optional": true])
            members["attributes"] = .array(attributes)
            entities[index] = .object(members)
        }
        model["entities"] = .array(entities)
        let path = deployment.directory + "/model-v2.json"
        try MeowCtl.compactJSON(JSONValue.object(model)).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// A store-service the demo starts beside the deployment: in memory, Olivia's, exiting with meowctl.
struct ExtraDevice {
    let process: Process
    let device: Device

    static func start(_ deployment: Deployment, name: String, environment: String, model: String) async throws -> ExtraDevice {
        let binary = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
            .deletingLastPathComponent().appendingPathComponent("store-service").path
        let socket = deployment.socket(name)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--socket", socket, "--in-memory", "--model", model, "--device-name", name, "--environment", environment,
                             "--sync-socket", deployment.socket("sync-service"), "--sync-credential", deployment.credentials["olivia"] ?? "",
                             "--no-orphan-repair"]
        var environmentVariables = ProcessInfo.processInfo.environment
        environmentVariables["MEOW_EXIT_WITH_PID"] = String(getpid())
        process.environment = environmentVariables
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready once it answers hello on its socket (it binds the socket after opening its stores).
        for _ in 0..<200 {
            if let client = try? WireClient(socketPath: socket), (try? await client.hello(client: "meowctl-demo", credential: nil)) != nil {
                return ExtraDevice(process: process, device: Device(name: name, client: client))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.terminate()
        throw DemoError("\(name) (store-service at \(binary)) did not start within 10 s")
    }

    func stop() {
        device.client.close()
        process.terminate()
        process.waitUntilExit()
    }
}
