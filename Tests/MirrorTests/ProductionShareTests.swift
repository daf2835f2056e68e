import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// The documented schema steps (initializeSchema in development, `meowctl schema deploy`)
    /// are enough for everything the mirror writes in production, sharing included: an app
    /// team would otherwise first meet an undeployed field in its App Store build.
    @Suite("Mirroring: sharing in production after the schema steps", .timeLimit(.minutes(5)))
    struct ProductionShareTests {
        /// Trips with photos (to-many), tags (many-to-many: CDMR records) and data attributes
        /// (sent as assets past the device's threshold).
        static let model: JSONValue = [
            "name": "Trips",
            "entities": [
                ["name": "Trip", "attributes": [["name": "id", "type": "string"], ["name": "cover", "type": "binary", "allowsExternalBinaryDataStorage": true]],
                 "relationships": [["name": "photos", "destination": "Photo", "toMany": true, "inverse": "trip"],
                                   ["name": "tags", "destination": "Tag", "toMany": true, "inverse": "trips"]]],
                ["name": "Photo", "attributes": [["name": "id", "type": "string"], ["name": "caption", "type": "string"], ["name": "data", "type": "binary"]],
                 "relationships": [["name": "trip", "destination": "Trip", "inverse": "photos"]]],
                ["name": "Tag", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "trips", "destination": "Trip", "toMany": true, "inverse": "tags"]]],
            ],
            "configurations": [
                ["name": "Private", "scope": "private", "entities": ["Trip", "Photo", "Tag"]],
                ["name": "Shared", "scope": "shared", "entities": ["Trip", "Photo", "Tag"]],
            ],
        ]

        /// 48 bytes: past the devices' asset threshold of 16, so it travels as `CD_<name>_ckAsset`.
        static let large: JSONValue = .string(Data(repeating: 7, count: 48).base64EncodedString())

        /// The owner's live records of one zone in production's private database.
        static func productionRecords(_ cloud: Cloud, zone: String) async throws -> [JSONValue] {
            let client = try WireClient(socketPath: cloud.socket)
            defer { client.close() }
            try await client.hello(client: "production-share-tests", credential: "owner-secret", environment: "production")
            let page = try await client.call("changes.fetchZone", ["database": "private", "zoneID": ["zoneName": .string(zone)], "since": .null, "limit": 10000])
            #expect(page["moreComing"] == false)
            return page["changed"]?.arrayValue ?? []
        }

        /// Refused exports a device reports, across its stores.
        static func refusedExports(_ device: Device) async throws -> [JSONValue] {
            try await device.status()["stores"]?.arrayValue?.flatMap { $0["refusedExports"]?.arrayValue ?? [] } ?? []
        }

        @Test("After initializeSchema in development and meowctl schema deploy, a production share works end to end: create, accept, read, a readWrite participant's writes, stop")
        func wholeShareFlowInProduction() async throws {
            let cloud = try await Cloud.start()
            let path = cloud.directory.file("trips.json")
            try JSONWriter.text(Self.model).write(toFile: path, atomically: true, encoding: .utf8)
            let common = ["--model", path, "--asset-threshold", "16"]
            let debug = try await Device.start("D", user: "owner", cloud: cloud, extra: common)
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: common + ["--environment", "production"])
            let p = try await Device.start("P", user: "alice", cloud: cloud, extra: common + ["--environment", "production"])

            // The documented steps: define the schema from a development build, then deploy it.
            _ = try await debug.call("sync.initializeSchema")
            let deploy = try await MeowProcess.run("meowctl", ["schema", "deploy", "--socket", cloud.socket, "--credential", Cloud.adminCredential])
            #expect(deploy.status == 0, "\(deploy.stdout)\(deploy.stderr)")
            let production = try await cloud.admin("admin.schema", ["environment": "production"])["recordTypes"]
            for type in ["CD_Trip", "CD_Photo", "CD_Tag"] { #expect(production?[type]?["CD_moveReceipt"] == "BYTES", "\(type)") }
            #expect(production?["CD_Trip"]?["CD_cover_ckAsset"] == "ASSETID")
            #expect(production?["CD_Photo"]?["CD_data_ckAsset"] == "ASSETID")
            #expect(production?["CDMR"]?["CD_recordNames"] == "STRING")

            // The owner's trip, with a photo, a tag and large values (assets), all exported.
            let trip = try await GraphShareTests.insert(o, "Trip", ["id": "t1", "cover": Self.large])
            _ = try await GraphShareTests.insert(o, "Photo", ["id": "p1", "caption": "beach", "data": Self.large, "trip": .string(trip)])
            _ = try await GraphShareTests.insert(o, "Tag", ["id": "g1", "trips": [.string(trip)]])
            let sent = try await o.send()
            #expect(sent["refused"] == 0, "\(sent)")
            #expect(try await o.pending() == 0)

            let created = try await o.call("share.create", ["objectID": .string(trip), "participants": [["user": "alice", "permission": "readWrite"]]])
            #expect(created["pendingRecords"] == 0)
            #expect(created["sendError"] == nil)
            let zone = try #require(created["zoneName"]?.stringValue)
            let moved = try await Self.productionRecords(cloud, zone: zone)
            #expect(Set(moved.compactMap { $0["recordType"]?.stringValue }) == ["CD_Trip", "CD_Photo", "CD_Tag", "CDMR", "cloudkit.share"])
            #expect(try await Self.productionRecords(cloud, zone: "com.apple.coredata.cloudkit.zone").isEmpty, "a record was left in Core Data's zone")
            // Every field the move wrote is one initializeSchema defined, and each moved record
            // carries its move receipt in Core Data's own field.
            for record in moved where record["recordType"] != "cloudkit.share" {
                let type = record["recordType"]?.stringValue ?? "?"
                let undefined = (record["fields"]?.objectValue ?? [:]).keys.filter { production?[type]?[$0] == nil }
                #expect(undefined.isEmpty, "\(type) carries fields production's schema lacks: \(undefined)")
                #expect(record["fields"]?["CD_moveReceipt"]?["type"] == "bytes", "\(type)")
            }

            _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            #expect(try await p.ids("Trip", store: "Shared") == ["t1"])
            #expect(try await p.ids("Photo", store: "Shared") == ["p1"])
            #expect(try await p.ids("Tag", store: "Shared") == ["g1"])
            #expect(try await p.object(id: "t1", entity: "Trip")?["values"]?["cover"] == Self.large)

            // The readWrite participant edits the photo and adds one to the trip.
            try await p.set(try await p.objectID(id: "p1", entity: "Photo"), ["caption": "sunset"])
            _ = try await GraphShareTests.insert(p, "Photo", ["id": "p2", "data": Self.large, "trip": .string(try await p.objectID(id: "t1", entity: "Trip"))])
            let written = try await p.send()
            #expect(written["refused"] == 0, "\(written)")
            #expect(try await p.pending() == 0)
            #expect(try await Self.refusedExports(p) == [])

            try await o.fetch()
            #expect(try await o.object(id: "p1", entity: "Photo")?["values"]?["caption"] == "sunset")
            #expect(try await o.ids("Photo") == ["p1", "p2"])
            #expect(try await o.object(id: "p2", entity: "Photo")?["values"]?["data"] == Self.large)
            #expect(try await Self.refusedExports(o) == [])

            _ = try await o.call("share.stop", ["zoneName": .string(zone)])
            try await p.fetch()
            #expect(try await p.ids("Photo", store: "Shared") == [])
            #expect(try await o.ids("Photo") == ["p1", "p2"], "the owner keeps the data")
            await ConflictTests.stop(cloud, debug, o, p)
        }
    }
}
