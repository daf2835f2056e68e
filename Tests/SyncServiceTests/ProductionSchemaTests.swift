import CloudWire
import Foundation
import MeowWire
import SQLiteKit
@testable import SyncServiceKit
import TestSupport
import Testing

/// Production accepts only deployed record types and fields, refused as CloudKit refuses them.
@Suite(.timeLimit(.minutes(3))) struct ProductionSchemaTests {
    let dir = TemporaryDirectory(prefix: "ps")

    /// A cloud whose production schema is `deployed` (record type → field → wire type).
    static func cloud(deployed: [String: [String: String]]) throws -> CloudFixture {
        let cloud = try CloudFixture()
        try cloud.engine.write { state in
            for (recordType, fields) in deployed {
                for (field, type) in fields {
                    try state.db.execute("INSERT INTO field_types(record_type, field, type, environment) VALUES (?, ?, ?, 'production')", [recordType, field, type])
                }
            }
        }
        try cloud.engine.reloadFieldSchema()
        return cloud
    }

    static func itemError(_ error: WireError?, _ name: String) -> JSONValue? {
        error?.details["partialErrors"]?[name]
    }

    @Test("Production refuses a record type it does not have, with CloudKit's code and text; the other items of a non-atomic request are saved")
    func anUndeployedRecordTypeIsRefusedOverTheWire() async throws {
        let service = try await CloudProcess(dir: dir).start()
        let production = try WireClient(socketPath: dir.file("s.sock"))
        try await production.hello(client: "t", credential: "owner-secret", environment: "production")
        let admin = try await CloudProcess(dir: dir).connect(CloudProcess.admin, client: "t")
        let defaultZone: JSONValue = ["zoneName": "_defaultZone"]
        let refused = await CloudProcess.failure {
            _ = try await production.call("records.modify", ["database": "private", "atomic": false, "saves": [
                ["recordName": "n1", "zoneID": defaultZone, "recordType": "CD_Note", "fields": ["CD_text": ["type": "string", "value": "hi"]]],
            ]] as JSONValue)
        }
        #expect(refused?.code == .partialFailure)
        let item = Self.itemError(refused, "n1")
        #expect(item?["code"] == "invalidArguments")
        #expect(item?["message"] == "Cannot create new type CD_Note in production schema")
        #expect(item?["details"]?["ckErrorCode"] == 12)
        #expect(item?["details"]?["serverErrorCode"] == "BAD_REQUEST")
        #expect(item?["details"]?["recordType"] == "CD_Note")
        // Nothing was defined or saved in production; development is untouched and still learns.
        #expect(try await admin.call("admin.schema", ["environment": "production"] as JSONValue)["recordTypes"] == [:])
        let development = try await CloudProcess(dir: dir).connect("owner-secret", client: "t")
        _ = try await development.call("records.modify", ["database": "private", "saves": [
            ["recordName": "n1", "zoneID": defaultZone, "recordType": "CD_Note", "fields": ["CD_text": ["type": "string", "value": "hi"]]],
        ]] as JSONValue)
        #expect(try await admin.call("admin.schema", Empty())["recordTypes"]?["CD_Note"]?["CD_text"] == "STRING")
        let missing = await CloudProcess.failure {
            _ = try await production.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "n1", "zoneID": defaultZone]]] as JSONValue)
        }
        #expect(Self.itemError(missing, "n1")?["code"] == "unknownItem")
        for client in [production, admin, development] { client.close() }
        #expect(await service.stop() == 0)
    }

    @Test("Production refuses an undeployed field sent as an empty list, as any undeployed field; a deployed list field takes an empty list")
    func anUndeployedEmptyListIsRefused() async throws {
        let service = try await CloudProcess(dir: dir).start()
        let admin = try await CloudProcess(dir: dir).connect(CloudProcess.admin, client: "t")
        let development = try await CloudProcess(dir: dir).connect("owner-secret", client: "t")
        let defaultZone: JSONValue = ["zoneName": "_defaultZone"]
        _ = try await development.call("records.modify", ["database": "private", "saves": [
            ["recordName": "n1", "zoneID": defaultZone, "recordType": "CD_Note",
             "fields": ["CD_text": ["type": "string", "value": "hi"], "CD_labels": ["type": "list", "value": [["type": "string", "value": "a"]]]]],
        ]] as JSONValue)
        _ = try await admin.call("admin.deploySchema", Empty())
        let production = try WireClient(socketPath: dir.file("s.sock"))
        try await production.hello(client: "t", credential: "owner-secret", environment: "production")
        let refused = await CloudProcess.failure {
            _ = try await production.call("records.modify", ["database": "private", "atomic": false, "saves": [
                ["recordName": "n2", "zoneID": defaultZone, "recordType": "CD_Note",
                 "fields": ["CD_text": ["type": "string", "value": "hi"], "CD_tags": ["type": "list", "value": []]]],
                ["recordName": "n3", "zoneID": defaultZone, "recordType": "CD_Note", "fields": ["CD_labels": ["type": "list", "value": []]]],
            ]] as JSONValue)
        }
        #expect(refused?.code == .partialFailure)
        #expect(Self.itemError(refused, "n2")?["message"] == "Cannot create or modify field 'CD_tags' in record 'CD_Note' in production schema",
                "\(String(describing: refused))")
        #expect(refused?.details["saved"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["n3"])
        let schema = try await admin.call("admin.schema", ["environment": "production"] as JSONValue)
        #expect(schema["recordTypes"]?["CD_Note"]?["CD_tags"] == nil)
        for client in [production, admin, development] { client.close() }
        #expect(await service.stop() == 0)
    }

    @Test("Production refuses a field it does not have by name, and a deployed field's other type as development does; deployed records and shares save")
    func undeployedFieldsAndRetypedFieldsAreRefused() throws {
        let cloud = try Self.cloud(deployed: ["CD_CareEvent": ["CD_title": "string", "CD_value": "double"]])
        let production = cloud.engine.inEnvironment(.production)
        let zone = ZoneID(zoneName: "Zone")
        _ = try production.saveZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [zone]))
        var extra = record("b")
        extra.fields["CD_note"] = ["type": "string", "value": "new in this version"]
        extra.fields["CD_mood"] = ["type": "string", "value": "calm"]
        var retyped = record("c")
        retyped.fields["CD_value"] = ["type": "string", "value": "181"]
        let error = wireError {
            _ = try production.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [record("a"), extra, retyped], atomic: false))
        }
        #expect(error?.code == .partialFailure)
        let field = Self.itemError(error, "b")
        #expect(field?["code"] == "invalidArguments")
        // Of two undeployed fields, the first by name is the one named.
        #expect(field?["message"] == "Cannot create or modify field 'CD_mood' in record 'CD_CareEvent' in production schema")
        #expect(field?["details"]?["field"] == "CD_mood")
        #expect(Self.itemError(error, "c")?["message"] == "invalid attempt to set value type STRING for field 'CD_value' for type 'CD_CareEvent', defined to be: DOUBLE")
        #expect(error?.details["saved"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["a"])
        #expect(production.fieldSchema.withLock { $0 }.types == ["CD_CareEvent": ["CD_title": "string", "CD_value": "double"]])

        // A record of an undeployed type is refused even with no fields; a share record (CloudKit's
        // own type) needs no deployment.
        let empty = wireError {
            _ = try production.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [
                CloudRecord(recordName: "e", zoneID: zone, recordType: "CD_Empty")], atomic: false))
        }
        #expect(Self.itemError(empty, "e")?["message"] == "Cannot create new type CD_Empty in production schema")
        _ = try production.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [
            CloudRecord(recordName: CloudKitNames.zoneShareName, zoneID: zone, recordType: CloudKitNames.shareRecordType)]))

        // In an atomic zone one refused item fails the rest with batchRequestFailed, as any item error does.
        let atomic = wireError { _ = try production.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [record("d"), extra])) }
        #expect(Self.itemError(atomic, "d")?["code"] == "batchRequestFailed")
        #expect(Self.itemError(atomic, "b")?["details"]?["field"] == "CD_mood")
    }
}
