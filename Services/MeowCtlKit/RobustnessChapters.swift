import CloudWire
import Foundation
import MeowWire
import StoreWire

/// Chapter 9: records this app version cannot hold. A newer version on another of Olivia's
/// devices writes a kind of care event this version's model does not list; this device reports
/// it and keeps syncing, and imports it once the record holds what it can store. Then the cloud's
/// schema refuses a save that gives a field another type (what CloudKit does to an app version
/// that changed an attribute's type), and this version's own model passes the schema check a
/// development build runs at launch.
struct RobustnessChapters {
    let deployment: Deployment
    let transcript: DemoTranscript

    static let zone: JSONValue = ["zoneName": .string(ZoneID.coreDataZoneName)]

    func tell() async {
        await transcript.run("9. A newer app version writes what this one cannot hold") {
            try await unknownKind()
        }
    }

    /// A care event as another client writes it straight into Olivia's private database.
    private func event(kind: String, tag: String? = nil) -> JSONValue {
        var record: [String: JSONValue] = ["recordName": "NEWER-APP-NAP-1", "recordType": "CD_CareEvent", "zoneID": Self.zone, "fields": [
            CloudKitNames.entityNameField: ["type": "string", "value": "CareEvent"], "CD_id": ["type": "string", "value": "nap-1"],
            "CD_eventTypeRaw": ["type": "string", "value": .string(kind)], "CD_occurredAt": ["type": "date", "value": 1_796_040_000],
            "CD_updatedAt": ["type": "date", "value": 1_796_040_000]]]
        if let tag { record["recordChangeTag"] = .string(tag) }
        return .object(record)
    }

    private func unknownKind() async throws {
        let cloud = try await deployment.connect("sync-service", as: "olivia")
        defer { cloud.close() }
        let device = try await Device(deployment, "device-b")
        defer { device.client.close() }
        let saved = try await cloud.call("records.modify", ["database": "private", "saves": [event(kind: "nap")]])
        let tag = saved["saved"]?.arrayValue?.first?["recordChangeTag"]?.stringValue
        transcript.say("Olivia's newer app saves a CareEvent of kind \"nap\", a kind this version's model does not list")
        let fetched = try await device.client.call("sync.fetch", [:])
        transcript.say("device B: sync.fetch → \(MeowCtl.compactJSON(fetched))")
        let refused = try await device.status().stores.flatMap(\.unimportable)
        for entry in refused {
            transcript.say("sync.status lists \(entry.recordName) as unimportable: \(entry.code) — \(entry.message)")
        }
        transcript.check(refused.contains { $0.recordName == "NEWER-APP-NAP-1" && $0.code == "validationStringPatternMatching" },
                         "device B refused the record it cannot hold, said why, and the fetch went on (the rest of the page applied)")
        // The newer app settles on a kind both versions know.
        _ = try await cloud.call("records.modify", ["database": "private", "saves": [event(kind: "note", tag: tag)]])
        _ = try await device.client.call("sync.fetch", [:])
        let imported = try await device.count("CareEvent", predicate: "id == 'nap-1'")
        let still = try await device.status().stores.flatMap(\.unimportable)
        transcript.say("the newer app changes the kind to \"note\"; device B fetches again")
        transcript.check(imported == 1 && still.isEmpty, "device B imported the record's new version and no longer lists it")
        // A field given another type than its first save gave it: the cloud's schema refuses it.
        let typed = try? await cloud.call("records.modify", ["database": "private", "saves": [[
            "recordName": "NEWER-APP-NAP-2", "recordType": "CD_CareEvent", "zoneID": Self.zone,
            "fields": ["CD_value": ["type": "string", "value": "high"]]]]])
        let schema = try await deployment.connect("sync-service", as: "admin")
        defer { schema.close() }
        let defined = try await schema.call("admin.schema", [:])["recordTypes"]?["CD_CareEvent"]?["CD_value"]
        transcript.say("a save giving CD_value a string, where the schema says \(defined.cell): \(typed == nil ? "refused (invalidArguments: invalid attempt to set value type STRING for field 'CD_value' …)" : "accepted")")
        transcript.check(typed == nil && defined == "DOUBLE", "the cloud's schema refused a field of another type, as CloudKit does")
        // What a development build runs at launch (initializeCloudKitSchema): this version's
        // model against the cloud's schema, before any real record goes out.
        let initialized = try await device.read("sync.initializeSchema", as: SchemaInitialization.self)
        let fields = initialized.recordTypes["CD_CareEvent"]?.count ?? 0
        transcript.say("device B: sync.initializeSchema → \(initialized.uploaded) representative records saved and deleted; CD_CareEvent has \(fields) fields")
        transcript.check(initialized.uploaded == 2, "this app version's model agrees with the cloud's schema (initializeCloudKitSchema)")
    }
}
