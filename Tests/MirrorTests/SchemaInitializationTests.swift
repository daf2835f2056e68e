import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// initializeCloudKitSchema: the cloud's schema learns every field before real records go.
    @Suite("Mirroring: initializing the cloud's schema", .timeLimit(.minutes(5)))
    struct SchemaInitializationTests {
        static let expectedEventFields: [String: JSONValue] = [
            "CD_entityName": "STRING", "CD_id": "STRING", "CD_eventTypeRaw": "STRING", "CD_occurredAt": "TIMESTAMP", "CD_updatedAt": "TIMESTAMP",
            "CD_value": "DOUBLE", "CD_note": "STRING", "CD_session": "STRING", "MC_fieldModified": "STRING", "CD_moveReceipt": "BYTES"]

        @Test("sync.initializeSchema defines every field's type from one record per entity and leaves no record behind; a dry run uploads nothing")
        func initializeSchemaDefinesEveryField() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let dry = try await a.call("sync.initializeSchema", ["dryRun": true])
            #expect(dry["uploaded"] == 0 && dry["dryRun"] == true)
            #expect(dry["recordTypes"]?["CD_CareEvent"] == .object(Self.expectedEventFields))
            #expect(dry["recordTypes"]?["CD_CareSession"]?["CD_isDefault"] == "INT64")
            #expect(try await cloud.admin("admin.schema", [:])["recordTypes"] == [:], "a dry run uploads nothing")

            let done = try await a.call("sync.initializeSchema")
            #expect(done["uploaded"] == 2)
            let schema = try await cloud.admin("admin.schema", [:])["recordTypes"]
            #expect(schema?["CD_CareEvent"] == .object(Self.expectedEventFields))
            #expect(schema?["CD_CareSession"]?["CD_createdAt"] == "TIMESTAMP")
            #expect(try await cloud.records(user: "owner").isEmpty, "the representative records are deleted again")
            // Real records then go out under the schema the representatives defined.
            try await a.insertEvents(["e1"])
            #expect(try await a.send()["saved"] == 1)
            // A representative left behind (a run whose delete failed) is overwritten and
            // deleted by the next run, not left for devices to import.
            let other = try await cloud.connect("owner-secret")
            defer { other.close() }
            _ = try await other.call("records.modify", ["database": "private", "saves": [[
                "recordName": "initializeSchema-CareEvent", "recordType": "CD_CareEvent", "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"],
                "fields": ["CD_entityName": ["type": "string", "value": "CareEvent"]]]]])
            #expect(try await a.call("sync.initializeSchema")["uploaded"] == 2)
            let left = try await cloud.records(user: "owner")
            #expect(left.count == 1 && left.first?["fields"]?["CD_id"]?["value"] == "e1", "\(left.map { $0["recordName"] ?? .null })")
            await ConflictTests.stop(cloud, a)
        }

        /// An app version that changed an attribute's type finds out at initialization, with
        /// CloudKit's message, instead of at its first export.
        @Test("sync.initializeSchema fails with CloudKit's message when the schema already gives a field another type")
        func initializeSchemaMeetsAnotherType() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let other = try await cloud.connect("owner-secret")
            defer { other.close() }
            let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]
            _ = try await other.call("zones.save", ["database": "private", "zoneIDs": [zone]])
            _ = try await other.call("records.modify", ["database": "private", "saves": [[
                "recordName": "old-version", "recordType": "CD_CareEvent", "zoneID": zone,
                "fields": ["CD_value": ["type": "string", "value": "120 mg/dL"]]]]])
            let refused = try await a.failure("sync.initializeSchema")
            #expect(refused.code == .invalidArguments)
            #expect(refused.message == "sync.initializeSchema: invalid attempt to set value type DOUBLE for field 'CD_value' for type 'CD_CareEvent', defined to be: STRING")
            #expect(try await cloud.records(user: "owner").map { $0["recordName"] } == ["old-version"], "nothing of the refused batch was saved")
            await ConflictTests.stop(cloud, a)
        }
    }
}
