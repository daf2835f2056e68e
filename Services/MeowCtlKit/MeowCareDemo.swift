import Foundation
import MeowWire
import StoreWire

/// The MeowCare story, chapter by chapter, against a local deployment: Olivia owns devices A
/// and B, Pablo owns device P; one sync-service is the cloud.
struct MeowCareDemo {
    let deployment: Deployment
    let transcript: DemoTranscript

    func tell() async {
        var sessionID = ""
        await transcript.run("1. Olivia logs blood-glucose readings on device A") {
            let deviceA = try await Device(deployment, "device-a")
            defer { deviceA.client.close() }
            let context = try await deviceA.openContext()
            let session = try await deviceA.insert(context, "CareSession",
                                                    ["id": "mochi", "title": "Mochi's care log", "isDefault": false])
            for (value, time) in [(182.0, "07:30"), (165.0, "12:10"), (143.0, "19:45")] {
                _ = try await deviceA.insert(context, "CareEvent", [
                    "id": .string("bg-\(time)"), "eventTypeRaw": "bloodGlucose", "value": .double(value),
                    "occurredAt": .string("2026-11-30T\(time):00Z"), "updatedAt": .string("2026-11-30T\(time):00Z"),
                    "session": .string(session)])
                transcript.say("insert CareEvent bloodGlucose \(Int(value)) mg/dL at \(time) (no store assigned)")
            }
            let inserted = try await deviceA.save(context).inserted ?? []
            for entry in inserted {
                transcript.say("saved \(entry.objectID) → \(entry.store) store (\(entry.reason.rawValue))")
            }
            transcript.check(inserted.count == 4 && inserted.allSatisfy { $0.store == "Private" },
                             "the session and its 3 readings are in the private store, routed deterministically (seed 002's rule)")
            sessionID = inserted.first { $0.objectID.contains("/CareSession/") }?.objectID ?? ""
            let count = try await deviceA.count("CareEvent", predicate: "session.id == 'mochi' AND eventTypeRaw == 'bloodGlucose'")
            transcript.check(count == 3, "device A fetches 3 readings of Mochi's session (fetch across both stores)")
        }

        await transcript.run("2. Device B sees them") {
            let deviceB = try await Device(deployment, "device-b")
            defer { deviceB.client.close() }
            let deviceA = try await Device(deployment, "device-a")
            defer { deviceA.client.close() }
            let before = try await deviceB.count("CareEvent", predicate: "session.id == 'mochi'")
            let pendingBefore = try await deviceB.pendingCount()
            let sent = try await deviceA.client.call("sync.send", [:])
            transcript.say("device A: sync.send → \(MeowCtl.compactJSON(sent))")
            let fetched = try await deviceB.client.call("sync.fetch", [:])
            transcript.say("device B: sync.fetch → \(MeowCtl.compactJSON(fetched))")
            let count = try await deviceB.count("CareEvent", predicate: "session.id == 'mochi'")
            transcript.check(before == 0 && count == 3, "device B had none of Mochi's readings and now has all 3")
            let pendingAfter = try await deviceB.pendingCount()
            // B's own start-up default session may be pending before, and merges into A's (the
            // same record): pending can only shrink. Imports queued to go back would make it grow.
            transcript.check(pendingAfter <= pendingBefore,
                             "what device B imported is not queued to go back to the cloud (no echo: \(pendingBefore) pending before the fetch, \(pendingAfter) after)")
        }

        await CloudSharingChapters(deployment: deployment, transcript: transcript).tell()
        await SeedChapters(deployment: deployment, transcript: transcript).tell()
        await transcript.run("7a. Two contexts on device A edit the same reading (Core Data merge policy)") {
            try await conflictChapter()
        }
        await ConvergenceChapters(deployment: deployment, transcript: transcript).tell()
        await RobustnessChapters(deployment: deployment, transcript: transcript).tell()
        await LeavingChapter(deployment: deployment, transcript: transcript).tell()
        await SchemaChapter(deployment: deployment, transcript: transcript).tell()
        _ = sessionID
    }

    /// Two contexts on device A edit the same reading; the later save's merge policy decides per
    /// property (Core Data's mergeByPropertyObjectTrump, MeowCare's choice).
    private func conflictChapter() async throws {
        let device = try await Device(deployment, "device-a")
        defer { device.client.close() }
        let reading = try await device.fetch("CareEvent", predicate: "id == 'bg-07:30'")
        guard let objectID = reading.first?.objectID else {
            transcript.check(false, "the 07:30 reading exists on device A")
            return
        }
        let kitchen = try await device.openContext(policy: "mergeByPropertyObjectTrump")
        let phone = try await device.openContext(policy: "mergeByPropertyObjectTrump")
        _ = try await device.set(kitchen, objectID, ["note": "before breakfast"])
        _ = try await device.set(phone, objectID, ["value": 176.0, "note": "re-measured"])
        transcript.say("context 'kitchen' sets note = \"before breakfast\"; context 'phone' sets value = 176, note = \"re-measured\"")
        _ = try await device.save(kitchen)
        transcript.say("'kitchen' saves first")
        let merged = try await device.save(phone)
        let written = merged.merged.first?.written ?? []
        transcript.say("'phone' saves second: conflict on the row's version; policy mergeByPropertyObjectTrump writes \(written)")
        let final = try await device.fetch("CareEvent", predicate: "id == 'bg-07:30'").first?.values
        transcript.say("stored: value = \(final?["value"]?.doubleValue.map { String(Int($0)) } ?? "nil"), note = \(final?["note"]?.stringValue ?? "nil")")
        transcript.check(final?["value"]?.doubleValue == 176 && final?["note"] == "re-measured",
                         "both properties both contexts changed were decided by the policy (the saving context's values win)")
    }
}

/// A store-service as the demo uses it.
struct Device {
    let name: String
    let client: WireClient

    init(_ deployment: Deployment, _ name: String) async throws {
        self.name = name
        client = try await deployment.connect(name)
    }

    init(name: String, client: WireClient) {
        self.name = name
        self.client = client
    }

    func has(_ op: String) async throws -> Bool {
        let info = try await client.call("info", Empty())
        return info["ops"]?.arrayValue?.contains(.string(op)) == true
    }

    func openContext(policy: String = "mergeByPropertyObjectTrump", author: String? = nil) async throws -> String {
        var params: [String: JSONValue] = ["name": "demo", "mergePolicy": .string(policy)]
        if let author { params["author"] = .string(author) }
        return try StoreReply.read(ContextOpenResult.self, from: try await client.call("context.open", params), op: "context.open").context
    }

    func insert(_ context: String, _ entity: String, _ values: [String: JSONValue], store: String? = nil,
                uuid: String? = nil, zone: String? = nil) async throws -> String {
        var params: [String: JSONValue] = ["context": .string(context), "entity": .string(entity), "values": .object(values)]
        if let store { params["store"] = .string(store) }
        if let uuid { params["uuid"] = .string(uuid) }
        if let zone { params["zone"] = .string(zone) }
        return try StoreReply.read(InsertResult.self, from: try await client.call("object.insert", params), op: "object.insert").objectID ?? ""
    }

    func set(_ context: String, _ objectID: String, _ values: [String: JSONValue]) async throws -> JSONValue {
        try await client.call("object.set", ["context": .string(context), "objectID": .string(objectID), "values": .object(values)])
    }

    func save(_ context: String) async throws -> SaveResult {
        try await read("context.save", ["context": .string(context)], as: SaveResult.self)
    }

    func fetch(_ entity: String, predicate: String, stores: [String]? = nil) async throws -> [ManagedObject] {
        var params: [String: JSONValue] = ["entity": .string(entity), "predicate": .string(predicate)]
        if let stores { params["stores"] = .array(stores.map { .string($0) }) }
        return try await read("fetch", params, as: FetchedObjects.self).objects
    }

    /// `op`'s result read as its type (a reply that does not read is an error naming the field).
    func read<R: Decodable>(_ op: String, _ params: [String: JSONValue] = [:], as type: R.Type) async throws -> R {
        try StoreReply.read(R.self, from: try await client.call(op, params), op: op)
    }

    /// Changes queued for the cloud, over both stores.
    func pendingCount() async throws -> Int { try await status().pending }

    func status() async throws -> SyncStatus { try await read("sync.status", as: SyncStatus.self) }

    /// The shared store's share metadata.
    func shares() async throws -> [ShareMetadata] { try await read("share.list", as: ShareListResult.self).shares }

    func count(_ entity: String, predicate: String) async throws -> Int {
        try StoreReply.read(CountResult.self, from: try await client.call("fetch.count", ["entity": .string(entity), "predicate": .string(predicate)]),
                            op: "fetch.count").count
    }
}
