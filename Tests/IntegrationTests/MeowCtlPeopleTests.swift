import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// A cloud (sync-service with olivia, pablo and an admin) and olivia's device mirroring to it;
/// pablo's device on request. Every process is stopped with the fixture.
private struct PeopleDeployment {
    static let olivia = "olivia-secret"
    static let pablo = "pablo-secret"
    static let admin = "admin-secret-for-tests"

    let directory: TemporaryDirectory
    let cloud: MeowProcess
    let device: MeowProcess

    // Laid out as deploy/meowcare-local does, so --dir finds sockets and credentials.
    var cloudSocket: String { directory.file("sockets/sync-service.sock") }
    var deviceSocket: String { directory.file("sockets/device-a.sock") }

    static func start(deviceOptions: [String] = [], directory: TemporaryDirectory = TemporaryDirectory(prefix: "mctl"),
                      devicePersistence: [String] = ["--in-memory"]) async throws -> PeopleDeployment {
        try FileManager.default.createDirectory(atPath: directory.file("config"), withIntermediateDirectories: true)
        let users = directory.file("config/users.json")
        try #"{"users":[{"user":"olivia","credential":"olivia-secret"},{"user":"pablo","credential":"pablo-secret"}]}"#
            .write(toFile: users, atomically: true, encoding: .utf8)
        try #"{"admin":"admin-secret-for-tests","olivia":"olivia-secret","pablo":"pablo-secret"}"#
            .write(toFile: directory.file("config/credentials.json"), atomically: true, encoding: .utf8)
        let cloudSocket = directory.file("sockets/sync-service.sock")
        let cloud = try await MeowProcess.start("sync-service", ["--socket", cloudSocket, "--in-memory",
                                                                    "--users", users, "--admin-credential", admin])
        let device = try await MeowProcess.start("store-service", ["--socket", directory.file("sockets/device-a.sock")] + devicePersistence + [
                                                                      "--sync-socket", cloudSocket,
                                                                      "--sync-credential", olivia, "--device-name", "A"] + deviceOptions)
        return PeopleDeployment(directory: directory, cloud: cloud, device: device)
    }

    func startParticipantDevice() async throws -> (process: MeowProcess, socket: String) {
        let socket = directory.file("sockets/device-p.sock")
        let process = try await MeowProcess.start("store-service", ["--socket", socket, "--in-memory", "--sync-socket", cloudSocket,
                                                                       "--sync-credential", Self.pablo, "--device-name", "P"])
        return (process, socket)
    }

    func client(_ socket: String, credential: String? = nil) async throws -> WireClient {
        let client = try WireClient(socketPath: socket)
        try await client.hello(client: "meowctl-tests", credential: credential)
        return client
    }

    func stop() async {
        _ = await device.stop()
        _ = await cloud.stop()
    }
}

/// Runs meowctl and parses its stdout as one JSON document.
private func meowctlJSON(_ arguments: [String]) async throws -> (status: Int32, json: JSONValue, stderr: String) {
    let run = try await MeowProcess.run("meowctl", arguments + ["--json"])
    let json = try JSONDecoder().decode(JSONValue.self, from: Data(run.stdout.utf8))
    return (run.status, json, run.stderr)
}

private func kinds(_ doctor: JSONValue) -> Set<String> {
    Set((doctor["findings"]?.arrayValue ?? []).compactMap { $0["kind"]?.stringValue })
}

private let event: [String: JSONValue] = ["eventTypeRaw": "note", "occurredAt": "2026-11-30T08:00:00Z", "updatedAt": "2026-11-30T08:00:00Z"]

@Suite("meowctl for people")
struct MeowCtlPeopleTests {
    @Test("doctor passes on a clean deployment (device and cloud), in tables and in JSON")
    func doctorPassesOnACleanDeployment() async throws {
        let deployment = try await PeopleDeployment.start()
        let socket = deployment.deviceSocket
        #expect(try await MeowProcess.run("meowctl", ["sessions", "add", "--socket", socket, "--id", "mochi", "--title", "Mochi"]).status == 0)
        let added = try await meowctlJSON(["events", "add", "--socket", socket, "--type", "bloodGlucose", "--value", "182", "--session", "mochi"])
        #expect(added.status == 0)
        #expect(added.json["store"] == "Private" && added.json["reason"] == "relatedObject")
        #expect(try await meowctlJSON(["sync", "now", "--socket", socket]).status == 0)

        let cloud = ["--cloud", deployment.cloudSocket, "--credential", PeopleDeployment.olivia]
        let doctor = try await meowctlJSON(["doctor", "--socket", socket] + cloud)
        #expect(doctor.status == 0)
        #expect(doctor.json["ok"] == true)
        #expect(doctor.json["findings"]?.arrayValue?.isEmpty == true)
        #expect(doctor.json["checks"]?.arrayValue?.contains { $0["name"] == "cloudSharedDefaultZone" && $0["ok"] == true } == true)
        let human = try await MeowProcess.run("meowctl", ["doctor", "--socket", socket] + cloud)
        #expect(human.status == 0)
        #expect(human.stdout.contains("No problems found."))
        await deployment.stop()
    }

    @Test("doctor finds a seed-002 object, an orphan and an object in the shared core-data zone, and explains each")
    func doctorFindsPlantedObjects() async throws {
        // An object in the shared store's core-data zone, which the shared database has not: a
        // mirroring device refuses to write as its mirror, so it is planted while the device's
        // stores are served without one, as an import (author sync) would have written it.
        let directory = TemporaryDirectory(prefix: "mctl")
        let stores = directory.file("device-a")
        let offline = try await MeowProcess.start("store-service", ["--socket", directory.file("offline.sock"), "--data-dir", stores])
        let planter = try WireClient(socketPath: directory.file("offline.sock"))
        try await planter.hello(client: "meowctl-tests")
        let importer = try await planter.call("context.open", ["author": "sync"])["context"] ?? .null
        _ = try await planter.call("object.insert", ["context": importer, "entity": "CareEvent", "store": "Shared",
                                                     "zone": "com.apple.coredata.cloudkit.zone",
                                                     "values": .object(event.merging(["id": "in-core-data-zone"]) { $1 })])
        _ = try await planter.call("context.save", ["context": importer])
        planter.close()
        #expect(await offline.stop() == 0)

        let deployment = try await PeopleDeployment.start(directory: directory, devicePersistence: ["--data-dir", stores])
        let device = try await deployment.client(deployment.deviceSocket)
        defer { device.close() }
        let app = try await device.call("context.open", [:])["context"] ?? .null
        let stray = try await device.call("object.insert", ["context": app, "entity": "CareEvent", "store": "Shared",
                                                            "values": .object(event.merging(["id": "stray"]) { $1 })])
        _ = try await device.call("object.insert", ["context": app, "entity": "CareEvent", "values": .object(event.merging(["id": "orphan"]) { $1 })])
        let saved = try await device.call("context.save", ["context": app])
        #expect(saved["unexportable"]?.arrayValue?.count == 1)
        let strayID = saved["inserted"]?.arrayValue?.first { $0["temporaryID"] == stray["objectID"] }?["objectID"]

        let doctor = try await meowctlJSON(["doctor", "--socket", deployment.deviceSocket])
        #expect(doctor.status == 1)
        #expect(doctor.json["ok"] == false)
        #expect(kinds(doctor.json).isSuperset(of: ["wrongStore", "orphan", "sharedDefaultZone"]))
        let findings = doctor.json["findings"]?.arrayValue ?? []
        #expect(findings.contains { $0["kind"] == "wrongStore" && $0["objectID"] == strayID && $0["store"] == "Shared" })
        #expect(findings.contains { $0["kind"] == "orphan" && $0["summary"]?.stringValue?.contains("'orphan'") == true && $0["store"] == "Private" })
        #expect(findings.contains { $0["kind"] == "sharedDefaultZone" && $0["zone"] == "com.apple.coredata.cloudkit.zone" })
        #expect(findings.allSatisfy { !($0["explanation"]?.stringValue ?? "").isEmpty && !($0["fix"]?.stringValue ?? "").isEmpty })
        // The seed-002 object is reported once (wrongStore), not again as the mirror's unexportable.
        #expect(!kinds(doctor.json).contains("unexportable"))

        let human = try await MeowProcess.run("meowctl", ["doctor", "--socket", deployment.deviceSocket])
        #expect(human.status == 1)
        #expect(human.stdout.contains("[wrongStore]") && human.stdout.contains("seed 002"))
        #expect(human.stdout.contains("[orphan]") && human.stdout.contains("repair.orphans"))

        // Repairing the private orphan clears that finding (the check can fail and pass).
        _ = try await device.call("repair.orphans", [:])
        let after = try await meowctlJSON(["doctor", "--socket", deployment.deviceSocket])
        #expect(!(after.json["findings"]?.arrayValue ?? []).contains { $0["kind"] == "orphan" && $0["store"] == "Private" })
        await deployment.stop()
    }

    @Test("legacy routing with the shared store loaded first: events add lands in the shared store, warns, and doctor finds it")
    func doctorFindsLegacyRoutedEvent() async throws {
        let deployment = try await PeopleDeployment.start(deviceOptions: ["--routing", "legacy", "--load-order", "shared,private"])
        let added = try await MeowProcess.run("meowctl", ["events", "add", "--socket", deployment.deviceSocket, "--type", "bloodGlucose", "--value", "180"])
        #expect(added.status == 0)
        #expect(added.stdout.contains("Shared store (loadOrder)"))
        #expect(added.stderr.contains("seed 002"))
        let status = try await meowctlJSON(["sync", "status", "--socket", deployment.deviceSocket])
        #expect(status.json["stores"]?.arrayValue?.contains { $0["store"] == "Shared" && $0["unexportable"]?.arrayValue?.count == 1 } == true)
        let doctor = try await meowctlJSON(["doctor", "--socket", deployment.deviceSocket])
        #expect(doctor.status == 1)
        #expect(kinds(doctor.json).contains("wrongStore"))
        await deployment.stop()
    }

    @Test("doctor finds a relationship that left its store (planted in the SQLite file, as old data has it)")
    func doctorFindsCrossStoreRelationship() async throws {
        let directory = TemporaryDirectory(prefix: "mctl")
        let socket = directory.file("device.sock")
        let options = ["--socket", socket, "--data-dir", directory.file("data")]
        let first = try await MeowProcess.start("store-service", options)
        #expect(try await MeowProcess.run("meowctl", ["sessions", "add", "--socket", socket, "--id", "mochi", "--title", "Mochi"]).status == 0)
        #expect(try await MeowProcess.run("meowctl", ["events", "add", "--socket", socket, "--type", "note", "--id", "linked", "--session", "mochi"]).status == 0)
        let clean = try await meowctlJSON(["doctor", "--socket", socket])
        #expect(clean.status == 0)
        #expect(clean.json["checks"]?.arrayValue?.contains { $0["name"] == "exports" && $0["skipped"] == true } == true)
        #expect(await first.stop() == 0)

        // The event's session now names a row the store does not have (where a cross-store link ends up).
        let plant = try await MeowProcess.run("/usr/bin/env", ["python3", "-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("UPDATE e_CareEvent SET r_session = 999 WHERE a_id = 'linked'")
            db.commit()
            """, directory.file("data/MeowCare-Private.sqlite")])
        #expect(plant.status == 0, "\(plant.stderr)")
        let second = try await MeowProcess.start("store-service", options)
        let doctor = try await meowctlJSON(["doctor", "--socket", socket])
        #expect(doctor.status == 1)
        let finding = doctor.json["findings"]?.arrayValue?.first { $0["kind"] == "crossStore" }
        #expect(finding?["summary"]?.stringValue?.contains("CareSession/p999") == true)
        #expect(finding?["store"] == "Private")
        _ = await second.stop()
    }

    @Test("doctor finds exports stuck behind a cloud error and deferred by its retry-after; sync send exits 1")
    func doctorFindsStuckExports() async throws {
        let deployment = try await PeopleDeployment.start()
        let admin = try await deployment.client(deployment.cloudSocket, credential: PeopleDeployment.admin)
        defer { admin.close() }
        _ = try await admin.call("admin.injectFault", ["code": "requestRateLimited", "op": "records.modify", "user": "olivia",
                                                       "retryAfterSeconds": 600])
        #expect(try await MeowProcess.run("meowctl", ["events", "add", "--socket", deployment.deviceSocket, "--type", "note", "--note", "hi"]).status == 0)
        let send = try await meowctlJSON(["sync", "send", "--socket", deployment.deviceSocket])
        #expect(send.status == 1)
        #expect(send.json["error"]?["code"] == "requestRateLimited")

        let doctor = try await meowctlJSON(["doctor", "--socket", deployment.deviceSocket])
        #expect(doctor.status == 1)
        #expect(kinds(doctor.json).isSuperset(of: ["exportStuck", "exportDeferred"]))
        let status = try await MeowProcess.run("meowctl", ["sync", "status", "--socket", deployment.deviceSocket, "--require-quiescent"])
        #expect(status.status == 1)
        #expect(status.stdout.contains("last error: requestRateLimited"))
        #expect(status.stdout.contains("quiescent: NO"))

        // The request log shows the refusal, filtered by user and result.
        let log = try await MeowProcess.run("meowctl", ["log", "--socket", deployment.cloudSocket, "--credential", PeopleDeployment.admin,
                                                "--user", "olivia", "--result", "requestRateLimited", "--json"])
        #expect(log.status == 0)
        let entries = try log.stdout.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        #expect(!entries.isEmpty && entries.allSatisfy { $0["user"] == "olivia" && $0["code"] == "requestRateLimited" })
        await deployment.stop()
    }

    @Test("sync schema defines the model's fields in the cloud's schema; a dry run prints them only; a retyped field fails with CloudKit's message")
    func syncSchemaInitializesTheCloudsSchema() async throws {
        let deployment = try await PeopleDeployment.start()
        let dry = try await MeowProcess.run("meowctl", ["sync", "schema", "--socket", deployment.deviceSocket, "--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.stdout.contains("CD_CareEvent: CD_entityName STRING, CD_eventTypeRaw STRING, CD_id STRING, CD_moveReceipt BYTES, CD_note STRING, CD_occurredAt TIMESTAMP"), "\(dry.stdout)")
        #expect(dry.stdout.contains("dry run: nothing uploaded"))
        let admin = try await deployment.client(deployment.cloudSocket, credential: PeopleDeployment.admin)
        defer { admin.close() }
        #expect(try await admin.call("admin.schema", [:])["recordTypes"] == [:])
        let done = try await meowctlJSON(["sync", "schema", "--socket", deployment.deviceSocket])
        #expect(done.status == 0)
        #expect(done.json["uploaded"] == 2)
        #expect(try await admin.call("admin.schema", [:])["recordTypes"]?["CD_CareEvent"]?["CD_value"] == "DOUBLE")
        // On a cloud reset since, a field the schema types otherwise (another app version wrote
        // it so) fails the run.
        _ = try await admin.call("admin.reset", ["scope": "all"])
        let writer = try await deployment.client(deployment.cloudSocket, credential: PeopleDeployment.olivia)
        defer { writer.close() }
        let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
        _ = try await writer.call("zones.save", ["database": "private", "zoneIDs": [zone]])
        _ = try await writer.call("records.modify", ["database": "private", "saves": [[
            "recordName": "E-1", "recordType": "CD_CareEvent", "zoneID": zone, "fields": ["CD_occurredAt": ["type": "string", "value": "yesterday"]]]]])
        let refused = try await MeowProcess.run("meowctl", ["sync", "schema", "--socket", deployment.deviceSocket])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("invalid attempt to set value type TIMESTAMP for field 'CD_occurredAt' for type 'CD_CareEvent', defined to be: STRING"),
                "\(refused.stderr)")
        await deployment.stop()
    }

    @Test("doctor explains a cloud record the store refused to import")
    func doctorFindsUnimportableRecords() async throws {
        let deployment = try await PeopleDeployment.start()
        let writer = try await deployment.client(deployment.cloudSocket, credential: PeopleDeployment.olivia)
        defer { writer.close() }
        let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
        _ = try await writer.call("zones.save", ["database": "private", "zoneIDs": [zone]])
        _ = try await writer.call("records.modify", ["database": "private", "saves": [[
            "recordName": "NAP-1", "recordType": "CD_CareEvent", "zoneID": zone,
            "fields": ["CD_entityName": ["type": "string", "value": "CareEvent"], "CD_id": ["type": "string", "value": "nap"],
                       "CD_eventTypeRaw": ["type": "string", "value": "nap"], "CD_occurredAt": ["type": "date", "value": 1_780_000_000],
                       "CD_updatedAt": ["type": "date", "value": 1_780_000_000]]]]])
        #expect(try await MeowProcess.run("meowctl", ["sync", "fetch", "--socket", deployment.deviceSocket]).status == 0)
        let doctor = try await meowctlJSON(["doctor", "--socket", deployment.deviceSocket])
        #expect(doctor.status == 1)
        let finding = doctor.json["findings"]?.arrayValue?.first { $0["kind"] == "unimportable" }
        #expect(finding?["summary"]?.stringValue?.contains("NAP-1") == true)
        #expect(finding?["explanation"]?.stringValue?.contains("'nap' is not one of the allowed values") == true)
        let status = try await MeowProcess.run("meowctl", ["sync", "status", "--socket", deployment.deviceSocket])
        #expect(status.stdout.contains("NAP-1 in __defaultOwner__/com.apple.coredata.cloudkit.zone: validationStringPatternMatching"), "\(status.stdout)")
        await deployment.stop()
    }

    @Test("log --follow prints requests as they happen, filtered, until stopped")
    func logFollow() async throws {
        let deployment = try await PeopleDeployment.start()
        let follow = try MeowProcess("meowctl", ["log", "--follow", "--json", "--socket", deployment.cloudSocket,
                                                     "--credential", PeopleDeployment.admin, "--op", "records.modify"])
        // A request made after the follower started shows up in its output; other ops do not.
        #expect(try await MeowProcess.run("meowctl", ["events", "add", "--socket", deployment.deviceSocket, "--type", "note", "--id", "followed"]).status == 0)
        #expect(try await MeowProcess.run("meowctl", ["sync", "send", "--socket", deployment.deviceSocket]).status == 0)
        #expect(await follow.waitForOutput(containing: #""op":"records.modify""#, timeout: .seconds(20)))
        let lines = follow.standardOutput.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
        #expect(!lines.isEmpty && lines.allSatisfy { $0["op"] == "records.modify" })
        #expect(follow.isRunning)
        follow.signal(SIGTERM)
        #expect(await follow.waitForExit(timeout: .seconds(10)) != nil)
        await deployment.stop()
    }

    @Test("sync signout / signin: the device's data leaves and comes back; status says it is signed out")
    func signOutAndIn() async throws {
        let deployment = try await PeopleDeployment.start()
        #expect(try await MeowProcess.run("meowctl", ["events", "add", "--socket", deployment.deviceSocket, "--type", "note", "--note", "before"]).status == 0)
        #expect(try await MeowProcess.run("meowctl", ["sync", "send", "--socket", deployment.deviceSocket]).status == 0)
        let out = try await meowctlJSON(["sync", "signout", "--socket", deployment.deviceSocket])
        #expect(out.status == 0)
        #expect(out.json["signedIn"] == false)
        let status = try await MeowProcess.run("meowctl", ["sync", "status", "--socket", deployment.deviceSocket])
        #expect(status.stdout.hasPrefix("signed out"))
        #expect(try await MeowProcess.run("meowctl", ["sync", "now", "--socket", deployment.deviceSocket]).status == 1)
        let signedIn = try await MeowProcess.run("meowctl", ["sync", "signin", "--socket", deployment.deviceSocket])
        #expect(signedIn.status == 0)
        #expect(signedIn.stdout.contains("signed in as olivia"))
        #expect(try await MeowProcess.run("meowctl", ["sync", "fetch", "--socket", deployment.deviceSocket]).status == 0)
        let events = try await meowctlJSON(["events", "list", "--socket", deployment.deviceSocket])
        #expect(events.json["events"]?.arrayValue?.map { $0["note"] } == ["before"])
        await deployment.stop()
    }

    @Test("doctor --cloud finds another user's core-data zone in the participant's shared database")
    func doctorFindsSharedCoreDataZone() async throws {
        let deployment = try await PeopleDeployment.start()
        let participant = try await deployment.startParticipantDevice()
        let olivia = try await deployment.client(deployment.cloudSocket, credential: PeopleDeployment.olivia)
        let pablo = try await deployment.client(deployment.cloudSocket, credential: PeopleDeployment.pablo)
        defer { olivia.close(); pablo.close() }
        let cloud = ["--cloud", deployment.cloudSocket, "--credential", PeopleDeployment.pablo]
        let before = try await meowctlJSON(["doctor", "--socket", participant.socket] + cloud)
        #expect(before.status == 0)

        let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
        _ = try await olivia.call("zones.save", ["database": "private", "zoneIDs": [zone]])
        _ = try await olivia.call("records.modify", ["database": "private", "saves": [
            ["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "zoneID": zone, "fields": [:]]]])
        _ = try await olivia.call("participants.add", ["zoneID": zone, "user": "pablo", "permission": "readOnly"])
        _ = try await pablo.call("shares.accept", ["zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone", "ownerName": "olivia"]])

        let doctor = try await meowctlJSON(["doctor", "--socket", participant.socket] + cloud)
        #expect(doctor.status == 1)
        #expect(doctor.json["findings"]?.arrayValue?.contains {
            $0["kind"] == "cloudSharedDefaultZone" && $0["zone"] == "olivia/com.apple.coredata.cloudkit.zone"
        } == true)
        _ = await participant.process.stop()
        await deployment.stop()
    }

    @Test("sessions, events, sharing, sync and diff for people: a session shared with a participant, tables and JSON")
    func peopleCommandsRoundTrip() async throws {
        let deployment = try await PeopleDeployment.start()
        let participant = try await deployment.startParticipantDevice()
        let owner = deployment.deviceSocket
        #expect(try await MeowProcess.run("meowctl", ["sessions", "add", "--socket", owner, "--id", "mochi", "--title", "Mochi's log"]).status == 0)
        for value in ["182", "143"] {
            #expect(try await MeowProcess.run("meowctl", ["events", "add", "--socket", owner, "--type", "bloodGlucose", "--value", value,
                                                  "--session", "mochi", "--at", "2026-11-30T07:30:00Z"]).status == 0)
        }
        let listed = try await meowctlJSON(["events", "list", "--socket", owner, "--session", "mochi", "--type", "bloodGlucose"])
        #expect(listed.json["events"]?.arrayValue?.count == 2)
        #expect(listed.json["events"]?.arrayValue?.allSatisfy { $0["session"] == "mochi" && $0["store"] == "Private" } == true)
        let table = try await MeowProcess.run("meowctl", ["sessions", "list", "--socket", owner])
        #expect(table.stdout.contains("mochi") && table.stdout.contains("EVENTS"))

        let cloud = ["--cloud", deployment.cloudSocket, "--credential", PeopleDeployment.olivia]
        let unsynced = try await meowctlJSON(["diff", "--socket", owner] + cloud)
        #expect(unsynced.status == 1)
        #expect(unsynced.json["identical"] == false)
        #expect(unsynced.json["zones"]?.arrayValue?.contains { ($0["onlyOnDevice"]?.arrayValue?.count ?? 0) >= 3 } == true)
        let progress = try await MeowProcess.run("meowctl", ["sync", "now", "--socket", owner, "--progress"])
        #expect(progress.status == 0)
        #expect(progress.stderr.contains("sync.now: done"))
        #expect(progress.stdout.contains("Sent:") && !progress.stdout.contains("sync.now: done"))
        let synced = try await meowctlJSON(["diff", "--socket", owner] + cloud)
        #expect(synced.status == 0)
        #expect(synced.json["identical"] == true)

        // A local edit not yet sent: diff names the record and the field, with both values.
        let device = try await deployment.client(owner)
        let context = try await device.call("context.open", [:])["context"] ?? .null
        let edited = listed.json["events"]?.arrayValue?.first { $0["value"] == 182 }?["objectID"] ?? .null
        _ = try await device.call("object.set", ["context": context, "objectID": edited, "values": ["value": 99.0]])
        _ = try await device.call("context.save", ["context": context])
        device.close()
        let differing = try await meowctlJSON(["diff", "--socket", owner] + cloud)
        #expect(differing.status == 1)
        let fields = differing.json["zones"]?.arrayValue?.flatMap { $0["differing"]?.arrayValue ?? [] }.flatMap { $0["fields"]?.arrayValue ?? [] }
        #expect(fields == [["field": "CD_value", "device": "99", "cloud": "182"]])
        #expect(try await MeowProcess.run("meowctl", ["sync", "now", "--socket", owner]).status == 0)

        let shared = try await meowctlJSON(["share", "create", "--socket", owner, "--session", "mochi", "--participant", "pablo:readOnly"])
        #expect(shared.status == 0)
        let zone = try #require(shared.json["result"]?["zoneName"]?.stringValue)
        let invitations = try await meowctlJSON(["share", "invitations", "--socket", participant.socket])
        #expect(invitations.json["invitations"]?.arrayValue?.contains { $0["zoneID"]?["zoneName"] == .string(zone) } == true)
        let accepted = try await MeowProcess.run("meowctl", ["share", "accept", "--socket", participant.socket, "--zone", zone, "--owner", "olivia"])
        #expect(accepted.status == 0)
        let onP = try await meowctlJSON(["events", "list", "--socket", participant.socket, "--session", "mochi"])
        #expect(onP.json["events"]?.arrayValue?.count == 2)
        #expect(onP.json["events"]?.arrayValue?.allSatisfy { $0["store"] == "Shared" && $0["zone"] == .string(zone) } == true)

        // Read-only: the participant's insert is refused (exit 1, the code on stdout with --json).
        let refused = try await meowctlJSON(["events", "add", "--socket", participant.socket, "--type", "feeding", "--session", "mochi"])
        #expect(refused.status == 1)
        #expect(refused.json["error"]?["code"] == "permissionFailure")
        #expect(try await MeowProcess.run("meowctl", ["share", "permission", "--socket", owner, "--zone", zone, "--user", "pablo",
                                              "--permission", "readWrite"]).status == 0)
        let log = try await MeowProcess.run("meowctl", ["log", "--socket", deployment.cloudSocket, "--credential", PeopleDeployment.admin,
                                                "--op", "shares.accept", "--zone", zone])
        #expect(log.status == 0)
        #expect(log.stdout.contains("pablo") && log.stdout.contains("shares.accept"))
        #expect(log.stdout.contains("store-service mirror (P)"), "the request names the device whose mirror sent it")
        #expect(try await meowctlJSON(["doctor", "--socket", participant.socket, "--cloud", deployment.cloudSocket,
                                       "--credential", PeopleDeployment.pablo]).status == 0)
        _ = await participant.process.stop()
        await deployment.stop()
    }

    @Test("--dir DIR stands in for sockets and credentials of a local deployment (deploy/meowcare-local's layout)")
    func deploymentDirectory() async throws {
        let deployment = try await PeopleDeployment.start()
        let participant = try await deployment.startParticipantDevice()
        let dir = deployment.directory.path
        #expect(try await MeowProcess.run("meowctl", ["events", "add", "--dir", dir, "--type", "water", "--value", "40", "--session", "default-session"]).status == 0)
        #expect(try await meowctlJSON(["events", "list", "--dir", dir, "--type", "water"]).json["events"]?.arrayValue?.count == 1)
        #expect(try await meowctlJSON(["events", "list", "--dir", dir, "--device", "device-p", "--type", "water"]).json["events"]?.arrayValue?.count == 0)
        #expect(try await MeowProcess.run("meowctl", ["sync", "now", "--dir", dir]).status == 0)
        // The cloud checks run as the device's own user: olivia for device A, pablo for device P.
        for (device, user) in [("device-a", "olivia"), ("device-p", "pablo")] {
            let doctor = try await meowctlJSON(["doctor", "--dir", dir, "--device", device])
            #expect(doctor.status == 0, "\(device): \(doctor.json["findings"] ?? .null)")
            #expect(doctor.json["checks"]?.arrayValue?.contains { $0["name"] == "cloudUser" && $0["detail"]?.stringValue?.contains("(\(user))") == true } == true)
        }
        let diff = try await meowctlJSON(["diff", "--dir", dir])
        #expect(diff.status == 0)
        #expect(diff.json["zones"]?.arrayValue?.contains { ($0["matching"]?.intValue ?? 0) >= 2 } == true)
        let log = try await MeowProcess.run("meowctl", ["log", "--dir", dir, "--user", "olivia", "--op", "records.modify"])
        #expect(log.status == 0)
        #expect(log.stdout.contains("owner writes own zone"))
        #expect(try await MeowProcess.run("meowctl", ["doctor", "--dir", deployment.directory.file("nowhere")]).status == 64)
        _ = await participant.process.stop()
        await deployment.stop()
    }

    @Test("exit codes: 64 for usage, 2 for an unreachable service, 1 for an error reply; --help for every command")
    func exitCodes() async throws {
        let deployment = try await PeopleDeployment.start()
        let missing = deployment.directory.file("nothing.sock")
        #expect(try await MeowProcess.run("meowctl", ["events", "list", "--socket", missing]).status == 2)
        #expect(try await MeowProcess.run("meowctl", ["doctor", "--socket", missing]).status == 2)
        #expect(try await MeowProcess.run("meowctl", ["events", "add", "--socket", deployment.deviceSocket]).status == 64)
        #expect(try await MeowProcess.run("meowctl", ["events", "frobnicate", "--socket", deployment.deviceSocket]).status == 64)
        #expect(try await MeowProcess.run("meowctl", ["sync", "now", "--socket", deployment.deviceSocket, "--bogus", "1"]).status == 64)
        #expect(try await MeowProcess.run("meowctl", ["events", "add", "--socket", deployment.deviceSocket, "--type", "bloodGlucose", "--value", "high"]).status == 64)
        let badType = try await meowctlJSON(["events", "add", "--socket", deployment.deviceSocket, "--type", "dance"])
        #expect(badType.status == 1)
        #expect(badType.json["error"]?["code"] == "validationStringPatternMatching")
        let unknownSession = try await MeowProcess.run("meowctl", ["events", "list", "--socket", deployment.deviceSocket, "--session", "nobody"])
        #expect(unknownSession.status == 1)
        let notAdmin = try await MeowProcess.run("meowctl", ["log", "--socket", deployment.cloudSocket, "--credential", PeopleDeployment.olivia])
        #expect(notAdmin.status == 1)
        #expect(notAdmin.stderr.contains("permissionFailure"))
        for command in ["events", "sessions", "share", "sync", "doctor", "diff", "log"] {
            let help = try await MeowProcess.run("meowctl", [command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.hasPrefix("meowctl \(command) —"))
        }
        await deployment.stop()
    }
}
