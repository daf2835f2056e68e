#if canImport(Glibc)
import CloudWire
import Glibc
#endif
import Foundation
import MeowWire

/// Chapter 6: the two seed bugs, shown and prevented.
struct SeedChapters {
    let deployment: Deployment
    let transcript: DemoTranscript

    static let illegalZoneText = "Illegal attempt to work with the core-data or default zone in the shared database"
    static let reassignText = "Can't reassign an object to a different store once it has been saved."

    func tell() async {
        await transcript.run("6a. Seed 002: a new object in the wrong store") {
            try await misroutedObject()
        }
        await transcript.run("6b. Seed 000: a saved orphan is repaired without a reassign") {
            try await savedOrphan()
        }
    }

    private func misroutedObject() async throws {
        // A third device of Olivia's, mirroring like the others, but with Core Data's load-order
        // behaviour and the shared store loaded first. Its stderr is kept to show the fault line.
        let directory = "/tmp/meow-demo-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let socket = directory + "/legacy.sock"
        let logPath = directory + "/legacy.log"
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else { throw DemoError("cannot create \(logPath)") }
        let legacy = Process()
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        legacy.executableURL = URL(fileURLWithPath: (exe as NSString).deletingLastPathComponent + "/store-service")
        legacy.arguments = ["--socket", socket, "--in-memory", "--routing", "legacy", "--load-order", "shared,private",
                            "--sync-socket", deployment.socket("sync-service"), "--sync-credential", deployment.credentials["olivia"] ?? "",
                            "--device-name", "legacy-device", "--no-orphan-repair"]
        legacy.standardError = FileHandle(forWritingAtPath: logPath)
        legacy.standardOutput = FileHandle.nullDevice
        try legacy.run()
        defer {
            legacy.terminate()
            legacy.waitUntilExit()
            try? FileManager.default.removeItem(atPath: directory)
        }
        var client: WireClient?
        for _ in 0..<300 where client == nil {
            client = try? WireClient(socketPath: socket)
            if client == nil { usleep(10_000) }
        }
        guard let client else { throw DemoError("the legacy store-service did not start") }
        defer { client.close() }
        try await client.hello(client: "meowctl-demo")
        let device = Device(name: "legacy", client: client)
        let context = try await device.openContext()
        _ = try await device.insert(context, "CareEvent", [
            "id": "bg-legacy", "eventTypeRaw": "bloodGlucose", "value": 180.0,
            "occurredAt": "2026-11-30T08:00:00Z", "updatedAt": "2026-11-30T08:00:00Z"])
        transcript.say("legacy routing (Core Data's load order, shared store first): insert a CareEvent with no assign, save")
        let saved = try await device.save(context)
        let entry = saved.inserted?.first
        transcript.check(entry?.store == "Shared" && entry?.reason == .loadOrder,
                         "it lands in the SHARED store (\(entry?.reason.rawValue ?? "?")) — seed 002's bug reproduced")
        transcript.check(saved.unexportable?.count == 1,
                         "the save reports it unexportable: it is in the shared store without a share zone")
        _ = try await client.call("sync.send", [:])
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let fault = log.split(separator: "\n").first { $0.hasPrefix("CoreData: fault: \(Self.illegalZoneText)") }
        transcript.say("the device's log on sync.send: \(fault ?? "(no fault line)")")
        let alive = try await client.call("health", [:])["ready"] == true
        transcript.check(fault != nil && alive, "exporting it produces the exact fault line of seed 002, and the device keeps running")
        let unexportable = try await device.status().stores.flatMap(\.unexportable)
        transcript.check(unexportable.count == 1, "sync.status reports the object as unexportable")

        let olivia = try await deployment.connect("sync-service", as: "olivia")
        defer { olivia.close() }
        do {
            _ = try await olivia.call("records.modify", ["database": "shared", "saves": [[
                "recordName": "bg-legacy", "recordType": "CD_CareEvent",
                "zoneID": ["zoneName": .string(ZoneID.coreDataZoneName)], "fields": [:]]]])
            transcript.check(false, "the cloud refuses a record in the shared database's core-data zone")
        } catch {
            let message = error.details["partialErrors"]?["bg-legacy"]?["message"]?.stringValue ?? error.message
            transcript.check(message.contains(Self.illegalZoneText), "sent straight to the cloud, the server refuses it too: \(message)")
        }

        let deviceA = try await Device(deployment, "device-a")
        defer { deviceA.client.close() }
        let fixed = try await deviceA.openContext()
        _ = try await deviceA.insert(fixed, "CareEvent", [
            "id": "bg-fixed", "eventTypeRaw": "bloodGlucose", "value": 180.0,
            "occurredAt": "2026-11-30T08:00:00Z", "updatedAt": "2026-11-30T08:00:00Z"])
        let routed = try await deviceA.save(fixed).inserted?.first
        transcript.check(routed?.store == "Private" && routed?.reason == .privateStoreDefault,
                         "device A (deterministic routing) puts the same insert in the private store (\(routed?.reason.rawValue ?? "?"))")
    }

    private func savedOrphan() async throws {
        let device = try await Device(deployment, "device-a")
        defer { device.client.close() }
        let context = try await device.openContext()
        let temporary = try await device.insert(context, "CareEvent", [
            "id": "note-orphan", "eventTypeRaw": "note", "occurredAt": "2026-07-27T00:00:00Z", "updatedAt": "2026-07-27T00:00:00Z"])
        let saved = try await device.save(context)
        let objectID = saved.inserted?.first?.objectID ?? temporary
        transcript.say("a note saved with no session: \(objectID) (a saved orphan, as old data has)")
        do {
            _ = try await device.client.call("object.assign", ["context": .string(context), "objectID": .string(objectID), "store": "Private"])
            transcript.check(false, "assigning a saved object is refused")
        } catch {
            transcript.check(error.message == Self.reassignText,
                             "the old repair's assign fails exactly as on the device: \"\(error.message)\"")
        }
        let repair = try await device.client.call("repair.orphans", Empty())
        let attached = repair["attachedObjectIDs"]?.arrayValue ?? []
        transcript.check(attached.contains(.string(objectID)) && (repair["assigned"]?.arrayValue ?? []).isEmpty,
                         "repair.orphans attaches it to the default session with no assign (attached \(repair["attached"]?.intValue ?? 0), assigned 0)")
        let after = try await device.client.call("object.get", ["objectID": .string(objectID)])
        transcript.check(after["values"]?["session"]?.stringValue != nil && after["store"] == "Private",
                         "the orphan now has a session and stayed in its store")
        let again = try await device.client.call("repair.orphans", Empty())
        transcript.check(again["attached"] == 0, "running the repair again changes nothing (idempotent)")
    }
}
