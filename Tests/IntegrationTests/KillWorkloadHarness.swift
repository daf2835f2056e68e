#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import MeowCareCluster

/// The cluster of the random-kill workload: a sync-service, two devices of the owner (O1, O2)
/// and one of the participant alice (P), all on files in `directory` and on the TripLog example
/// model, each started again with a crash point armed or not; and the client calls, counted, that a plan's SIGKILL on
/// the k-th acknowledgement rides on.
final class KillWorkloadHarness: @unchecked Sendable {
    // @unchecked: one test drives it, one call at a time.
    static let model = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/TripLog/TripLog.json").path
    static let devices = ["O1", "O2", "P"]
    static let processes = devices + ["cloud"]

    /// One kill: the victim, and a named point with its hit or a SIGKILL on the k-th acknowledgement.
    struct Kill: CustomStringConvertible {
        var victim: String
        var point: String?
        var afterAcks: Int?
        var description: String { "victim=\(victim) at=\(point ?? "sigkill-after-\(afterAcks ?? 0)-acks")" }

        static let devicePoints = ["store.midSave", "store.afterSaveCommit", "mirror.afterServerReply", "mirror.midImport", "mirror.afterApplyingPage"]
        static let cloudPoints = ["sync.midBatch", "sync.afterCommit"]

        static func random(_ rng: inout SplitMix64) -> Kill {
            let victim = processes.randomElement(using: &rng)!
            if Int.random(in: 0..<4, using: &rng) == 0 { return Kill(victim: victim, afterAcks: Int.random(in: 1...12, using: &rng)) }
            let point = (victim == "cloud" ? cloudPoints : devicePoints).randomElement(using: &rng)!
            return Kill(victim: victim, point: "\(point):\(Int.random(in: 1...(victim == "cloud" ? 6 : 3), using: &rng))")
        }
    }

    let directory = TemporaryDirectory(prefix: "kw")
    private var cluster: MeowCluster?
    private var clients: [String: WireClient] = [:]
    /// The kill armed now, and whether its SIGKILL has been sent.
    private(set) var armed: Kill?
    private var acknowledgements = 0
    private var sigkillDue = false
    private(set) var sigkillSent = false

    init() throws {}

    /// The latest process of `name` (a device, or `cloud`).
    var running: [String: MeowProcess] {
        guard let cluster else { return [:] }
        var processes = Dictionary(uniqueKeysWithValues: cluster.devices.compactMap { device in cluster.process(of: device.name).map { (device.name, $0) } })
        processes["cloud"] = cluster.cloudProcess
        return processes
    }

    func socket(_ name: String) -> String { name == "cloud" ? cluster!.cloud.socketPath : cluster![name].socketPath }

    /// Starts `name` (the cloud first: the cluster's first start), or starts it again on its data.
    func start(_ name: String, crashAt: String? = nil) async throws {
        clients[name]?.close()
        clients[name] = nil
        let environment = ["MEOW_CRASH_AT": crashAt ?? ""]
        guard let cluster else {
            precondition(name == "cloud", "the cloud starts first")
            var configuration = MeowClusterConfiguration(devices: [])
            configuration.additionalUsers = ["owner", "alice"]
            configuration.credentials = ["owner": "owner-secret", "alice": "alice-secret"]
            configuration.persistence = .sqlite
            configuration.directory = directory.path
            configuration.cloudEnvironment = environment
            configuration.externalDeployment = nil
            self.cluster = try await MeowCluster.start(configuration)
            return
        }
        if name == "cloud" {
            try await cluster.restartCloud(environment: environment)
        } else {
            try await cluster.addDevice(.init(name: name, user: name == "P" ? "alice" : "owner", arguments: ["--model", Self.model],
                                              environment: environment, dataDirectory: directory.file(name)))
        }
    }

    func startAll() async throws {
        for name in Self.processes.reversed() { try await start(name) }
    }

    /// Restarts the victim with the kill armed (a SIGKILL plan arms the call counter instead).
    func arm(_ kill: Kill) async throws {
        _ = await running[kill.victim]?.stop()
        try await start(kill.victim, crashAt: kill.point)
        armed = kill
        acknowledgements = 0
        sigkillDue = false
        sigkillSent = false
    }

    /// Whether the armed kill has struck: its SIGKILL was sent, or the victim reached its point
    /// (it logs that before it dies, so a failed call finds the line).
    func struck() async -> Bool {
        guard let armed, let victim = running[armed.victim] else { return false }
        if sigkillSent { return true }
        guard armed.point != nil else { return false }
        return await victim.waitForLine(containing: "crash point reached", timeout: .seconds(victim.isRunning ? 10 : 2)) != nil
    }

    /// Waits for the victim's death, restarts it disarmed; the exit status (137 for kill -9).
    func reap() async throws -> Int32? {
        guard let kill = armed, let victim = running[kill.victim] else { return nil }
        let status = await victim.waitForExit()
        armed = nil
        try await start(kill.victim)
        return status
    }

    /// SIGKILLs the armed victim now, at rest (its point was not reached in the round).
    func killAtRest() async throws -> Int32? {
        guard let kill = armed else { return nil }
        running[kill.victim]?.signal(SIGKILL)
        sigkillSent = true
        return try await reap()
    }

    private func client(_ name: String) async throws(WireError) -> WireClient {
        if let client = clients[name] { return client }
        let client = try WireClient(socketPath: socket(name), timeout: .seconds(120))
        try await client.hello(client: "kill-workload")
        clients[name] = client
        return client
    }

    /// A call to a device; when the armed plan's k-th acknowledgement has come, this call is sent
    /// and the victim SIGKILLed at once, while the call is in flight.
    @discardableResult
    func call(_ device: String, _ op: String, _ params: [String: JSONValue] = [:]) async throws(WireError) -> JSONValue {
        let client = try await client(device)
        let result: Result<JSONValue, WireError>
        if sigkillDue, let kill = armed, let victim = running[kill.victim] {
            sigkillDue = false
            sigkillSent = true
            let call = Task { () -> Result<JSONValue, WireError> in
                do throws(WireError) { return .success(try await client.call(op, params)) } catch { return .failure(error) }
            }
            victim.signal(SIGKILL)
            result = await call.value
        } else {
            do throws(WireError) { result = .success(try await client.call(op, params)) } catch { result = .failure(error) }
        }
        switch result {
        case .success(let value):
            acknowledgements += 1
            if let kill = armed, let k = kill.afterAcks, !sigkillSent, acknowledgements == k { sigkillDue = true }
            return value
        case .failure(let error):
            clients[device]?.close()
            clients[device] = nil
            throw error
        }
    }

    /// A client of the cloud as `user` (close it when done).
    func cloud(_ user: String) async throws -> WireClient {
        let client = try WireClient(socketPath: socket("cloud"), timeout: .seconds(60))
        try await client.hello(client: "kill-workload-inspect", credential: "\(user)-secret")
        return client
    }

    /// Every record of the owner's zones, by zone name.
    func ownerRecords() async throws -> [String: [JSONValue]] {
        let client = try await cloud("owner")
        defer { client.close() }
        var result: [String: [JSONValue]] = [:]
        for zone in try await client.call("zones.fetch", ["database": "private"])["zones"]?.arrayValue ?? [] {
            guard let name = zone["zoneID"]?["zoneName"]?.stringValue, name.hasPrefix("com.apple.coredata") else { continue }
            var token: JSONValue = .null
            while true {
                let page = try await client.call("changes.fetchZone", ["database": "private", "zoneID": ["zoneName": .string(name)],
                                                                         "since": token, "limit": 10000])
                result[name, default: []] += page["changed"]?.arrayValue ?? []
                token = page["token"] ?? .null
                if page["moreComing"] != true { break }
            }
        }
        return result
    }

    /// The owner's live shares: zone name → alice's permission ("" when she is not on it).
    func ownedShares() async throws -> [String: String] {
        let client = try await cloud("owner")
        defer { client.close() }
        var shares: [String: String] = [:]
        for share in try await client.call("shares.owned", [:])["shares"]?.arrayValue ?? [] {
            guard let zone = share["zoneID"]?["zoneName"]?.stringValue else { continue }
            shares[zone] = share["participants"]?.arrayValue?.first { $0["user"] == "alice" }?["permission"]?.stringValue ?? ""
        }
        return shares
    }

    /// Zones alice has accepted, by the cloud.
    func acceptedByAlice() async throws -> Set<String> {
        let client = try await cloud("alice")
        defer { client.close() }
        let invitations = try await client.call("shares.invitations", [:])["invitations"]?.arrayValue ?? []
        return Set(invitations.filter { $0["acceptanceStatus"] == "accepted" }.compactMap { $0["zoneID"]?["zoneName"]?.stringValue })
    }

    /// One device's objects as the model names them, and their object IDs by id; duplicates of
    /// an id are reported in `duplicates`.
    func snapshot(_ device: String) async throws -> (objects: [String: KillWorkloadModel.Object], objectIDs: [String: String], duplicates: [String]) {
        var fetched: [(KillWorkloadModel.Entity, JSONValue)] = []
        for entity in KillWorkloadModel.Entity.allCases {
            var params: [String: JSONValue] = ["entity": .string(entity.rawValue)]
            if device == "P" { params["stores"] = ["Shared"] }
            for object in try await call(device, "fetch", params)["objects"]?.arrayValue ?? [] { fetched.append((entity, object)) }
        }
        var idOf: [String: String] = [:]
        var objectIDs: [String: String] = [:]
        var duplicates: [String] = []
        for (_, object) in fetched {
            guard let objectID = object["objectID"]?.stringValue, let id = object["values"]?["id"]?.stringValue else { continue }
            idOf[objectID] = id
            if objectIDs[id] != nil { duplicates.append(id) }
            objectIDs[id] = objectID
        }
        var objects: [String: KillWorkloadModel.Object] = [:]
        for (entity, object) in fetched {
            guard let id = object["values"]?["id"]?.stringValue, let values = object["values"] else { continue }
            let parentKey = entity == .Day ? "trip" : entity == .Photo ? "day" : nil
            objects[id] = KillWorkloadModel.Object(
                entity: entity, text: values[KillWorkloadModel.textField(entity)]?.stringValue ?? "",
                parent: parentKey.flatMap { values[$0]?.stringValue }.map { idOf[$0] ?? "?\($0)" },
                tags: Set((entity == .Photo ? values["tags"]?.arrayValue ?? [] : []).compactMap(\.stringValue).map { idOf[$0] ?? "?\($0)" }))
        }
        return (objects, objectIDs, duplicates)
    }

    /// Every SQLite file under the deployment that fails `PRAGMA integrity_check`.
    func integrityProblems() async throws -> [String] {
        var problems: [String] = []
        let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".sqlite") } ?? []
        for file in files {
            let result = try await MeowProcess.run("/usr/bin/sqlite3", [directory.file(file), "PRAGMA integrity_check"])
            if result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "ok" { problems.append("\(file): \(result.stdout)") }
        }
        return problems
    }

    func stopAll() async {
        for client in clients.values { client.close() }
        clients = [:]
        await cluster?.stop()
    }
}
