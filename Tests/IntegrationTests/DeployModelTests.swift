import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

/// deploy/meowcare-local on a team's own model (examples/TripLog, both forms): `up --model`,
/// meowctl's watch, doctor and diff against it, production, and `upgrade` to a newer version.
@Suite("deploy/meowcare-local on your own model")
struct DeployModelTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let jsonModel = root.appendingPathComponent("examples/TripLog/TripLog.json").path
    static let bundleModel = root.appendingPathComponent("examples/TripLog/TripLog.xcdatamodeld").path
    static let newerModel = root.appendingPathComponent("examples/TripLog/TripLog-v2.json").path
    let deploy = DeployTests()

    func meowctl(_ arguments: [String]) async throws -> MeowProcess.Completion {
        try await MeowProcess.run(try ExecutableLocator.locate().path("meowctl"), arguments)
    }

    func object(_ text: String) throws -> [String: JSONValue] {
        try #require(try JSONParser.parse(text).objectValue, "not a JSON object: \(text)")
    }

    /// Every Trip on a device, through `meowctl call … fetch` (no context needed).
    func trips(_ directory: TemporaryDirectory, device: String = "device-a") async throws -> [JSONValue] {
        let reply = try await meowctl(["call", "--raw", "--socket", "\(directory.path)/sockets/\(device).sock", "fetch", #"{"entity": "Trip"}"#])
        #expect(reply.status == 0, "\(reply.stdout)")
        return try object(reply.stdout)["result"]?["objects"]?.arrayValue ?? []
    }

    func modelName(_ directory: TemporaryDirectory, device: String) async throws -> (name: String?, tripProperties: [String]) {
        let reply = try await meowctl(["call", "--raw", "--socket", "\(directory.path)/sockets/\(device).sock", "model.get"])
        let model = try object(reply.stdout)["result"]
        let trip = model?["entities"]?.arrayValue?.first { $0["name"] == "Trip" }
        return (model?["name"]?.stringValue, (trip?["attributes"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
    }

    @Test("up --model runs the devices on the JSON model; watch, doctor and diff work on it")
    func upOnTheJSONModel() async throws {
        let directory = TemporaryDirectory(prefix: "dm")
        try await deploy.withDeployment(in: directory) {
            let up = try await deploy.run(["up", "--dir", directory.path, "--model", Self.jsonModel])
            #expect(up.status == 0, "\(up.stderr)")
            #expect(up.stdout.contains("model: \(Self.jsonModel)"), "\(up.stdout)")
            for device in ["device-a", "device-b", "device-p"] {
                #expect(try await modelName(directory, device: device).name == "TripLog")
            }
            // watch on a device: subscribed (its stderr says so) before the save it must show.
            let watch = try MeowProcess(try ExecutableLocator.locate().path("meowctl"),
                                        ["watch", "--dir", directory.path, "--device", "device-a", "--topic", "remoteChange", "--count", "1"])
            defer { watch.kill() }
            #expect(await watch.waitForLine(containing: "meowctl: watching store-service") != nil, "\(watch.lines)")
            let insert = try await meowctl(["insert", "--dir", directory.path, "Trip", "--json",
                                            #"{"id": "9F1C2A4E-1B3D-4C5E-8F70-112233445566", "name": "Kyoto", "budget": "1200.50"}"#])
            #expect(insert.status == 0, "\(insert.stdout)\(insert.stderr)")
            let inserted = try object(insert.stdout)
            #expect(inserted["store"] == "Private", "\(insert.stdout)")
            let trip = try #require(inserted["objectID"]?.stringValue)
            #expect(await watch.waitForExit(timeout: .seconds(30)) == 0)
            #expect(watch.standardOutput.contains("remoteChange: 1 object changed in Private"), "\(watch.standardOutput)")

            #expect(try await meowctl(["sync", "now", "--dir", directory.path]).status == 0)
            let diff = try await meowctl(["diff", "--dir", directory.path, "--json"])
            #expect(diff.status == 0, "\(diff.stdout)\(diff.stderr)")
            let zones = try object(diff.stdout)["zones"]?.arrayValue ?? []
            #expect(zones.compactMap { $0["matching"]?.intValue }.reduce(0, +) == 1, "\(diff.stdout)")
            let doctor = try await meowctl(["doctor", "--dir", directory.path, "--json"])
            #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
            #expect(try object(doctor.stdout)["ok"] == true)
            // Device B (olivia's too) receives the trip from the cloud: the deployment mirrors on TripLog.
            #expect(try await meowctl(["sync", "now", "--dir", directory.path, "--device", "device-b"]).status == 0)
            #expect(try await trips(directory, device: "device-b").map { $0["values"]?["name"] } == ["Kyoto"])

            // Sharing takes any object of the model: the trip, with pablo (device P).
            let share = try await meowctl(["share", "create", "--dir", directory.path, "--object", trip, "--participant", "pablo:readOnly", "--json"])
            #expect(share.status == 0, "\(share.stdout)\(share.stderr)")
            let zone = try #require(try object(share.stdout)["result"]?["zoneName"]?.stringValue)
            #expect(try await meowctl(["share", "accept", "--dir", directory.path, "--device", "device-p", "--zone", zone, "--owner", "olivia"]).status == 0)
            #expect(try await trips(directory, device: "device-p").map { $0["values"]?["name"] } == ["Kyoto"])
        }
    }

    @Test("up on the Xcode bundle in production: the devices mirror to Production, which refuses TripLog's undeployed record types")
    func upOnTheBundleInProduction() async throws {
        let directory = TemporaryDirectory(prefix: "dm")
        try await deploy.withDeployment(in: directory) {
            let up = try await deploy.run(["up", "--dir", directory.path, "--model", Self.bundleModel, "--environment", "production"])
            #expect(up.status == 0, "\(up.stderr)")
            #expect(up.stdout.contains("cloud environment: production"), "\(up.stdout)")
            #expect(try await modelName(directory, device: "device-p").name == "TripLog")
            #expect(try await meowctl(["insert", "--dir", directory.path, "--device", "device-p", "Trip", #"{"name": "Lisbon"}"#]).status == 0)
            _ = try await meowctl(["sync", "now", "--dir", directory.path, "--device", "device-p"])
            let doctor = try await meowctl(["doctor", "--dir", directory.path, "--device", "device-p", "--json"])
            #expect(doctor.status == 1, "\(doctor.stdout)\(doctor.stderr)")
            let findings = try object(doctor.stdout)["findings"]?.arrayValue ?? []
            let undeployed = findings.filter { $0["kind"] == "undeployedSchema" }
            #expect(undeployed.contains { $0["summary"]?.stringValue?.contains("CD_Trip") == true }, "\(doctor.stdout)")
        }
    }

    @Test("upgrade moves one device to a newer model version on its store files and prints what the migration did")
    func upgradeToANewerVersion() async throws {
        let directory = TemporaryDirectory(prefix: "dm")
        try await deploy.withDeployment(in: directory) {
            #expect(try await deploy.run(["up", "--dir", directory.path, "--model", Self.jsonModel]).status == 0)
            #expect(try await meowctl(["insert", "--dir", directory.path, "Trip", #"{"name": "Kyoto", "currency": "JPY"}"#]).status == 0)
            #expect(try await meowctl(["insert", "--dir", directory.path, "Trip", #"{"name": "Porto"}"#]).status == 0)
            #expect(try await meowctl(["insert", "--dir", directory.path, "Day", #"{"dayNumber": 1, "notes": "temples"}"#]).status == 0)

            let upgrade = try await deploy.run(["upgrade", "--dir", directory.path, "--device", "device-a", "--model", Self.newerModel])
            #expect(upgrade.status == 0, "\(upgrade.stdout)\(upgrade.stderr)")
            #expect(upgrade.stdout.contains("device-a now runs \(Self.newerModel) (was \(Self.jsonModel))"), "\(upgrade.stdout)")
            #expect(upgrade.stdout.contains("Private store: entities added Expense; properties added Trip.coverColor, Trip.expenses; "
                                            + "properties renamed Trip.name → Trip.title; properties removed Day.notes; "
                                            + "rows kept: Day 1, Photo 0, Tag 0, Trip 2"), "\(upgrade.stdout)")
            #expect(upgrade.stdout.contains("Shared store: entities added Expense;"), "\(upgrade.stdout)")

            // The renamed property's data is there under its new name; the added one has its default.
            let trips = try await trips(directory).compactMap { $0["values"] }.sorted { ($0["title"]?.stringValue ?? "") < ($1["title"]?.stringValue ?? "") }
            #expect(trips.map { $0["title"] } == ["Kyoto", "Porto"])
            #expect(trips.map { $0["currency"] } == ["JPY", "EUR"])
            #expect(trips.map { $0["coverColor"] } == ["indigo", "indigo"])
            #expect(try await modelName(directory, device: "device-a").tripProperties.contains("title"))
            #expect(try await modelName(directory, device: "device-b").tripProperties.contains("name"), "the other devices keep their version")

            // The service logged the facts as one structured line per store; the config keeps the version.
            let log = try String(contentsOfFile: "\(directory.path)/logs/device-a.log", encoding: .utf8)
            let line = try #require(log.split(separator: "\n").first { $0.contains(#""msg":"store migrated""#) && $0.contains(#""store":"Private""#) })
            let facts = try object(String(line))
            #expect(facts["propertiesRenamed"] == ["Trip.name → Trip.title"])
            #expect(facts["rowsKept"]?["Trip"] == 2)
            #expect(try String(contentsOfFile: "\(directory.path)/config/device-a.conf", encoding: .utf8).contains("model = \(Self.newerModel)"))
            let status = try await deploy.run(["status", "--dir", directory.path])
            #expect(status.stdout.components(separatedBy: "ready").count - 1 == 4, "\(status.stdout)")
            #expect(status.stdout.contains("device-a      ready              restarts 0  model \(Self.newerModel)"), "\(status.stdout)")
            #expect(status.stdout.contains("device-b      ready              restarts 0  model \(Self.jsonModel)"), "\(status.stdout)")

            // Once upgraded there is nothing left to migrate.
            let again = try await deploy.run(["upgrade", "--dir", directory.path, "--device", "device-a", "--model", Self.newerModel])
            #expect(again.status == 0)
            #expect(again.stdout.contains("no migration"), "\(again.stdout)")
        }
    }

    @Test("an upgrade the migration refuses leaves the stores as they were and the device on its version")
    func refusedUpgrade() async throws {
        let directory = TemporaryDirectory(prefix: "dm")
        try await deploy.withDeployment(in: directory) {
            #expect(try await deploy.run(["up", "--dir", directory.path, "--model", Self.jsonModel]).status == 0)
            #expect(try await meowctl(["insert", "--dir", directory.path, "Trip", #"{"name": "Kyoto"}"#]).status == 0)
            // Trip.budget turned from Decimal into Double: not a change lightweight migration infers.
            let text = try String(contentsOfFile: Self.jsonModel, encoding: .utf8)
                .replacingOccurrences(of: #"{"name": "budget", "type": "decimal", "minValue": "0"}"#, with: #"{"name": "budget", "type": "double"}"#)
            let changed = directory.file("TripLog-changed.json")
            try text.write(toFile: changed, atomically: true, encoding: .utf8)
            let upgrade = try await deploy.run(["upgrade", "--dir", directory.path, "--device", "device-a", "--model", changed])
            #expect(upgrade.status == 1)
            #expect(upgrade.stderr.contains("it runs \(Self.jsonModel) again"), "\(upgrade.stderr)")
            #expect(upgrade.stderr.contains("134140"), "\(upgrade.stderr)")
            #expect(try await trips(directory).map { $0["values"]?["name"] } == ["Kyoto"])
            #expect(try String(contentsOfFile: "\(directory.path)/config/device-a.conf", encoding: .utf8).contains("model = \(Self.jsonModel)"))
        }
    }

    @Test("up refuses a model the devices could not load mirrored, and unknown options, before starting anything")
    func upRefusesBadInput() async throws {
        let directory = TemporaryDirectory(prefix: "dm")
        let text = try String(contentsOfFile: Self.jsonModel, encoding: .utf8)
            .replacingOccurrences(of: #"{"name": "name", "type": "string", "minLength": 1, "maxLength": 80}"#,
                                  with: #"{"name": "name", "type": "string", "optional": false}"#)
        let refused = directory.file("TripLog-refused.json")
        try text.write(toFile: refused, atomically: true, encoding: .utf8)
        let up = try await deploy.run(["up", "--dir", directory.path, "--model", refused])
        #expect(up.status == 1)
        #expect(up.stderr.contains("cannot run on a device") && up.stderr.contains("Trip"), "\(up.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory.path)/pids"), "nothing started")
        let typo = try await deploy.run(["up", "--dir", directory.path, "--modle", Self.jsonModel])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("unknown option --modle"))
    }
}
