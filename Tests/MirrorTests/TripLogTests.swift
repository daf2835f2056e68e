import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// The example app model of examples/TripLog (not MeowCare's): an owner and a participant run
    /// it through the cloud with every attribute type, tags on photos (many-to-many), a three-level
    /// share, a conflict and a migration.
    @Suite("Mirroring: the TripLog example model", .timeLimit(.minutes(5)))
    struct TripLogTests {
        static let examples = TripLogSample.examples
        static let jsonModel = TripLogSample.jsonModel
        static let xcodeModel = TripLogSample.xcodeModel
        static let (trip, day, photo) = (TripLogSample.trip, TripLogSample.day, TripLogSample.photo)

        /// The owner O and the participant P on the TripLog model, thumbnails over 64 bytes as assets.
        static func start(dataDirectory: String? = nil) async throws -> (Cloud, Device, Device) {
            let cloud = try await Cloud.start()
            let extra = ["--model", xcodeModel, "--asset-threshold", "64"]
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: extra, dataDirectory: dataDirectory.map { cloud.directory.file($0) })
            let p = try await Device.start("P", user: "alice", cloud: cloud, extra: extra)
            return (cloud, o, p)
        }

        /// Trip → Day → Photo, and a Tag on the photo (Photo.tags ↔ Tag.photos): the objectIDs by entity.
        static func graph(on o: Device) async throws -> [String: String] {
            var ids: [String: String] = [:]
            ids["Trip"] = try await GraphShareTests.insert(o, "Trip", .object(trip))
            ids["Day"] = try await GraphShareTests.insert(o, "Day", .object(day.merging(["trip": .string(ids["Trip"]!)]) { $1 }))
            ids["Tag"] = try await GraphShareTests.insert(o, "Tag", ["id": "C56A4180-65AA-42EC-A945-5FD21DEC0538", "name": "shrine"])
            ids["Photo"] = try await GraphShareTests.insert(o, "Photo", .object(photo.merging(["day": .string(ids["Day"]!),
                                                                                               "tags": [.string(ids["Tag"]!)]]) { $1 }))
            try await o.send()
            return ids
        }

        static func values(_ device: Device, _ entity: String, store: String? = nil) async throws -> [String: JSONValue] {
            try #require(try await device.objects(entity, store: store).first?["values"]?.objectValue, "\(device.name) has no \(entity)")
        }

        @Test("Every type crosses from the owner to a participant exactly, through a three-level share that takes the tag and its CDMR link; a link removed or added on one device follows on the other")
        func ownerAndParticipantShareTheGraph() async throws {
            let (cloud, o, p) = try await Self.start()
            let ids = try await Self.graph(on: o)
            let created = try await o.call("share.create", ["objectID": .string(ids["Trip"]!), "participants": [["user": "alice", "permission": "readWrite"]]])
            #expect(created["movedRecords"] == 5)
            let zone = try #require(created["zoneName"]?.stringValue)
            let records = try await cloud.records(user: "owner", zone: ["zoneName": .string(zone)])
            let photoRecord = try #require(records.first { $0["recordType"] == "CD_Photo" })
            let tagRecord = try #require(records.first { $0["recordType"] == "CD_Tag" })
            let linkRecord = try #require(records.first { $0["recordType"] == "CDMR" }, "the link moved into the share zone as a CDMR record")
            #expect(linkRecord["fields"]?["CD_entityNames"]?["value"] == "Photo:Tag")
            #expect(linkRecord["fields"]?["CD_relationships"]?["value"] == "tags:photos")
            #expect(linkRecord["fields"]?["CD_recordNames"]?["value"]?.stringValue
                    == "\(photoRecord["recordName"]?.stringValue ?? "?"):\(tagRecord["recordName"]?.stringValue ?? "?")")
            #expect(photoRecord["fields"]?["CD_thumbnail_ckAsset"]?["type"] == "asset", "the thumbnail went as an asset")
            _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            for (entity, expected) in [("Trip", Self.trip), ("Day", Self.day), ("Photo", Self.photo)] {
                let got = try await Self.values(p, entity, store: "Shared")
                for (key, value) in expected { #expect(got[key] == value, "\(entity).\(key)") }
            }
            #expect(try await Self.values(p, "Tag", store: "Shared")["name"] == "shrine")
            let photoOnP = try #require(try await p.objects("Photo", store: "Shared").first?["objectID"])
            let tagOnP = try #require(try await p.objects("Tag", store: "Shared").first?["objectID"])
            #expect(try await Self.values(p, "Photo", store: "Shared")["tags"] == [tagOnP], "the participant sees the shared photo's tag")
            #expect(try await Self.values(p, "Tag", store: "Shared")["photos"] == [photoOnP])

            // The owner removes the tag: the CDMR record is deleted, and the participant's link with it.
            try await o.set(ids["Photo"]!, ["tags": []])
            try await o.send()
            #expect(try await cloud.records(user: "owner", zone: ["zoneName": .string(zone)]).contains { $0["recordType"] == "CDMR" } == false)
            try await p.fetch()
            #expect(try await Self.values(p, "Photo", store: "Shared")["tags"] == [], "a link removed on the owner's device is removed on the participant's")
            #expect(try await Self.values(p, "Tag", store: "Shared")["name"] == "shrine", "removing the link keeps the tag")

            // The participant tags the photo again: the owner sees it.
            try await p.set(photoOnP.stringValue ?? "", ["tags": [tagOnP]])
            try await p.send()
            try await o.fetch()
            #expect(try await Self.values(o, "Photo")["tags"] == [.string(ids["Tag"]!)], "a link added by the participant reaches the owner")
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("A CDMR link fetched before its tag waits for it and links the photo when the tag arrives; sides named in either order are read")
        func linkBeforeItsTagWaits() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", Self.jsonModel])
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            func text(_ value: String) -> JSONValue { ["type": "string", "value": .string(value)] }
            let photo: JSONValue = ["recordName": "photo-1", "recordType": "CD_Photo", "zoneID": ImportRefusalTests.zone, "fields": [
                "CD_entityName": text("Photo"), "CD_caption": text("Lantern"), "CD_rating": ["type": "int64", "value": 4]]]
            // Another client's order (Tag first): the sides are matched by name, not by position.
            let link: JSONValue = ["recordName": "link-1", "recordType": "CDMR", "zoneID": ImportRefusalTests.zone, "fields": [
                "CD_entityNames": text("Tag:Photo"), "CD_relationships": text("photos:tags"), "CD_recordNames": text("tag-1:photo-1")]]
            _ = try await writer.call("records.modify", ["database": "private", "saves": [photo, link]])
            try await o.fetch()
            #expect(try await Self.values(o, "Photo")["tags"] == [], "the link waits: its tag has not arrived")
            let waiting = try await PendingLinkTests.waiting(o)
            #expect(waiting.count == 1 && waiting.first?["target"] == "tag-1")
            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                ["recordName": "tag-1", "recordType": "CD_Tag", "zoneID": ImportRefusalTests.zone, "fields": ["CD_entityName": text("Tag"), "CD_name": text("festival")]]]])
            try await o.fetch()
            let tag = try #require(try await o.objects("Tag").first?["objectID"])
            #expect(try await Self.values(o, "Photo")["tags"] == [tag], "the tag's arrival completes the link")
            #expect(try await PendingLinkTests.waiting(o).isEmpty)
            _ = try await writer.call("records.modify", ["database": "private", "deletes": [["recordName": "link-1", "zoneID": ImportRefusalTests.zone]]])
            try await o.fetch()
            #expect(try await Self.values(o, "Photo")["tags"] == [], "a deleted CDMR record removes the link")
            #expect(try await o.objects("Tag").count == 1, "and keeps both objects")
            await ConflictTests.stop(cloud, o)
        }

        @Test("sync.initializeSchema defines CDMR with its three fields for the many-to-many tags, and no record type of the hidden link entity")
        func initializeSchemaDefinesCDMR() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", Self.xcodeModel])
            let dry = try await o.call("sync.initializeSchema", ["dryRun": true])
            #expect(dry["recordTypes"]?["CDMR"] == ["CD_entityNames": "STRING", "CD_relationships": "STRING", "CD_recordNames": "STRING",
                                                     "MC_fieldModified": "STRING", "CD_moveReceipt": "BYTES"])
            #expect(dry["recordTypes"]?.objectValue?.keys.contains { $0.hasPrefix("CD__") } == false)
            #expect(try await o.call("sync.initializeSchema")["uploaded"] == 5, "Trip, Day, Photo, Tag and one CDMR")
            await ConflictTests.stop(cloud, o)
        }

        @Test("Concurrent edits of one photo by the owner and the participant converge on both devices")
        func conflictConverges() async throws {
            let (cloud, o, p) = try await Self.start()
            let ids = try await Self.graph(on: o)
            let zone = try #require(try await o.call("share.create", ["objectID": .string(ids["Trip"]!),
                                                                      "participants": [["user": "alice", "permission": "readWrite"]]])["zoneName"]?.stringValue)
            _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            let photoOnP = try #require(try await p.objects("Photo", store: "Shared").first?["objectID"]?.stringValue)
            try await o.set(ids["Photo"]!, ["caption": "Owner's caption", "rating": 3])
            try await p.set(photoOnP, ["caption": "Participant's caption", "latitude": 35.0])
            try await o.send()
            try await p.now()
            try await o.now()
            // Object IDs name each device's own store: the day and the tags are compared by what they hold.
            let onO = try await Self.values(o, "Photo").filter { $0.key != "day" && $0.key != "tags" }
            let onP = try await Self.values(p, "Photo", store: "Shared").filter { $0.key != "day" && $0.key != "tags" }
            #expect(onO == onP, "the two devices disagree")
            #expect(try await Self.values(o, "Photo")["tags"]?.arrayValue?.count == 1)
            #expect(try await Self.values(p, "Photo", store: "Shared")["tags"]?.arrayValue?.count == 1, "the edits keep the photo's tag")
            #expect(onO["caption"] == "Participant's caption", "the later edit of the caption wins")
            #expect(onO["rating"] == 3 && onO["latitude"]?.doubleValue == 35.0, "edits of different fields are both kept")
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("The owner's device migrates to a second model version and keeps syncing with a participant still on the first")
        func migrationKeepsSyncing() async throws {
            let (cloud, o, p) = try await Self.start(dataDirectory: "o-data")
            let ids = try await Self.graph(on: o)
            let zone = try #require(try await o.call("share.create", ["objectID": .string(ids["Trip"]!),
                                                                      "participants": [["user": "alice", "permission": "readWrite"]]])["zoneName"]?.stringValue)
            _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            _ = await o.stop()
            // Version 2: Trip gains a mandatory cover colour with a default.
            var text = try String(contentsOfFile: Self.jsonModel, encoding: .utf8)
            text = text.replacingOccurrences(of: #"{"name": "isArchived", "type": "boolean", "optional": false, "defaultValue": false}"#,
                                             with: #"{"name": "isArchived", "type": "boolean", "optional": false, "defaultValue": false}, {"name": "coverColor", "type": "string", "optional": false, "defaultValue": "indigo"}"#)
            let v2 = cloud.directory.file("TripLog-v2.json")
            try text.write(toFile: v2, atomically: true, encoding: .utf8)
            let migrated = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", v2, "--asset-threshold", "64"],
                                                  dataDirectory: cloud.directory.file("o-data"))
            let trip = try await Self.values(migrated, "Trip")
            #expect(trip["coverColor"] == "indigo", "existing rows get the new attribute's default")
            #expect(trip["budget"] == Self.trip["budget"] && trip["id"] == Self.trip["id"], "the migration keeps every value")
            try await migrated.set(ids["Trip"]!, ["coverColor": "red", "name": "Kyoto and Nara"])
            try await migrated.send()
            try await p.fetch()
            #expect(try await Self.values(p, "Trip", store: "Shared")["name"] == "Kyoto and Nara", "the older version still syncs")
            let record = try #require(try await cloud.records(user: "owner", zone: ["zoneName": .string(zone)]).first { $0["recordType"] == "CD_Trip" })
            #expect(record["fields"]?["CD_coverColor"]?["value"] == "red")
            await ConflictTests.stop(cloud, migrated, p)
        }
    }
}
