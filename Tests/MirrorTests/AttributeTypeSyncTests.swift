import CloudWire
import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Every attribute type crosses the cloud exactly, as the field type
    /// NSPersistentCloudKitContainer gives it.
    @Suite("Mirroring: every attribute type", .timeLimit(.minutes(5)))
    struct AttributeTypeSyncTests {
        static let model: JSONValue = [
            "name": "Kinds",
            "entities": [["name": "Sample", "attributes": [
                ["name": "id", "type": "string"], ["name": "small", "type": "integer16"], ["name": "medium", "type": "integer32"], ["name": "large", "type": "integer"],
                ["name": "ratio", "type": "double"], ["name": "single", "type": "float"], ["name": "price", "type": "decimal"],
                ["name": "title", "type": "string"], ["name": "flag", "type": "boolean"], ["name": "when", "type": "date"],
                ["name": "blob", "type": "binary", "allowsExternalBinaryDataStorage": true], ["name": "ident", "type": "uuid"],
                ["name": "link", "type": "uri"], ["name": "extra", "type": "transformable"],
            ]]],
            "configurations": [["name": "Private", "scope": "private", "entities": ["Sample"]],
                               ["name": "Shared", "scope": "shared", "entities": ["Sample"]]],
        ]

        static let values: [String: JSONValue] = [
            "id": "s1", "small": -32768, "medium": 2_147_483_647, "large": "-9223372036854775808", "ratio": 0.1, "single": 0.25,
            "price": "0.000000000000000000000000000000000001", "title": "Ünïcødé ✈︎", "flag": false, "when": "0001-01-01T00:00:00.001Z",
            "blob": "AAEC/f7/", "ident": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "link": "file:///tmp/a%20b", "extra": "YnBsaXN0MDA=",
        ]

        static func start(_ extra: [String] = []) async throws -> (Cloud, Device, Device) {
            let cloud = try await Cloud.start()
            let path = cloud.directory.file("kinds.json")
            try JSONWriter.text(model).write(toFile: path, atomically: true, encoding: .utf8)
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--model", path] + extra)
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--model", path] + extra)
            return (cloud, a, b)
        }

        /// The owner's one Sample record's fields.
        static func fields(_ cloud: Cloud) async throws -> [String: JSONValue] {
            try #require(try await cloud.records(user: "owner").first?["fields"]?.objectValue)
        }

        @Test("A binary value past --asset-threshold travels as the asset field CD_<name>_ckAsset; shrunk, it is bytes again")
        func largeDataTravelsAsAnAsset() async throws {
            let (cloud, a, b) = try await Self.start(["--asset-threshold", "16"])
            let large = Data((0..<100).map { UInt8($0) }).base64EncodedString()
            let id = try await GraphShareTests.insert(a, "Sample", ["id": "s1", "blob": .string(large), "extra": "AAAA"])
            try await a.send()
            var fields = try await Self.fields(cloud)
            #expect(fields["CD_blob_ckAsset"] == ["type": "asset", "value": .string(large)])
            #expect(fields["CD_blob"] == nil)
            #expect(fields["CD_extra"] == ["type": "bytes", "value": "AAAA"], "a value under the threshold stays bytes")
            try await b.fetch()
            #expect(try await b.objects("Sample").first?["values"]?["blob"] == .string(large))

            try await a.set(id, ["blob": "AQID"])
            try await a.send()
            fields = try await Self.fields(cloud)
            #expect(fields["CD_blob"] == ["type": "bytes", "value": "AQID"])
            #expect(fields["CD_blob_ckAsset"] == nil, "the asset field is removed when the value shrinks")
            try await b.fetch()
            #expect(try await b.objects("Sample").first?["values"]?["blob"] == "AQID")
            await ConflictTests.stop(cloud, a, b)
        }

        @Test("Concurrent edits of a large binary value on two devices converge to one value, in one field")
        func concurrentAssetEditsConverge() async throws {
            let (cloud, a, b) = try await Self.start(["--asset-threshold", "16"])
            let first = Data(repeating: 1, count: 40).base64EncodedString()
            let id = try await GraphShareTests.insert(a, "Sample", ["id": "s1", "blob": .string(first)])
            try await a.send()
            try await b.fetch()
            let onB = try #require(try await b.objects("Sample").first?["objectID"]?.stringValue)
            try await a.set(id, ["blob": .string(Data(repeating: 2, count: 50).base64EncodedString())])
            try await b.set(onB, ["blob": "AQID", "title": "small again"])
            try await a.send()
            try await b.now()
            try await a.now()
            let valueOnA = try await a.objects("Sample").first?["values"]?["blob"]
            let valueOnB = try await b.objects("Sample").first?["values"]?["blob"]
            #expect(valueOnA == valueOnB, "the devices disagree")
            #expect(valueOnA == "AQID", "the later edit wins")
            var fields = try await Self.fields(cloud)
            #expect(fields["CD_blob"]?["value"] == "AQID")
            #expect(fields["CD_blob_ckAsset"] == nil, "the record holds the value in one field")

            // The other way round: the later edit is the large one.
            let large = Data(repeating: 3, count: 60).base64EncodedString()
            try await a.set(id, ["blob": "BAUG"])
            try await b.set(onB, ["blob": .string(large)])
            try await a.send()
            try await b.now()
            try await a.now()
            #expect(try await a.objects("Sample").first?["values"]?["blob"] == .string(large))
            #expect(try await b.objects("Sample").first?["values"]?["blob"] == .string(large))
            fields = try await Self.fields(cloud)
            #expect(fields["CD_blob_ckAsset"]?["value"] == .string(large))
            #expect(fields["CD_blob"] == nil, "the record holds the value in one field")
            await ConflictTests.stop(cloud, a, b)
        }

        @Test("The cloud refuses an asset over its asset limit (limitExceeded, naming the field) and leaves assets out of the record's size")
        func assetLimits() async throws {
            let cloud = try await Cloud.start()
            _ = try await cloud.admin("admin.setLimits", ["maxAssetBytes": 64, "maxRecordBytes": 200])
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            func save(_ name: String, _ bytes: Int) async throws -> JSONValue {
                let value = Data(repeating: 7, count: bytes).base64EncodedString()
                return try await writer.call("records.modify", ["database": "private", "saves": [[
                    "recordName": .string(name), "recordType": "CD_Sample", "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"],
                    "fields": ["CD_blob_ckAsset": ["type": "asset", "value": .string(value)]]]]])
            }
            // 60 bytes of asset: over the record's 200 bytes as text, but assets are not counted.
            _ = try await save("fits", 60)
            do {
                _ = try await save("over", 65)
                Issue.record("an asset over maxAssetBytes was stored")
            } catch let error as WireError {
                // One record's refusal: the save's partial failure, keyed by the record.
                #expect(error.code == .partialFailure)
                let refusal = try #require(error.details["partialErrors"]?.objectValue?.values.first)
                #expect(refusal["code"] == "limitExceeded")
                #expect(refusal["details"]?["field"] == "CD_blob_ckAsset")
                #expect(refusal["details"]?["maxAssetBytes"] == 64)
            }
            await cloud.stop()
        }

        @Test("A value of every type saved on one device reads the same on another; the record has CloudKit's field types")
        func everyTypeCrossesTheCloud() async throws {
            let (cloud, a, b) = try await Self.start()
            let id = try await GraphShareTests.insert(a, "Sample", .object(Self.values))
            try await a.send()
            let record = try #require(try await cloud.records(user: "owner").first)
            let types = (record["fields"]?.objectValue ?? [:]).mapValues { $0["type"]?.stringValue ?? "" }
            #expect(types["CD_small"] == "int64" && types["CD_large"] == "int64" && types["CD_flag"] == "int64")
            #expect(types["CD_single"] == "double" && types["CD_when"] == "date" && types["CD_blob"] == "bytes" && types["CD_extra"] == "bytes")
            #expect(types["CD_price"] == "string" && types["CD_ident"] == "string" && types["CD_link"] == "string")
            #expect(record["fields"]?["CD_large"]?["value"] == .int(Int(Int64.min)), "the cloud holds Integer 64 exactly")
            try await b.fetch()
            let copy = try #require(try await b.objects("Sample").first)
            for (key, value) in Self.values { #expect(copy["values"]?[key] == value, "\(key)") }

            // An edit of some types travels back the same way.
            let edits: [String: JSONValue] = ["large": "9007199254740993", "price": "-1234567890.0987654321", "blob": "", "single": -3.5]
            try await b.set(try #require(copy["objectID"]?.stringValue), .object(edits))
            try await b.send()
            try await a.fetch()
            let edited = try #require(try await a.objects("Sample").first { $0["objectID"]?.stringValue == id })
            for (key, value) in edits { #expect(edited["values"]?[key] == value, "\(key)") }
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
