import Foundation
import MeowWire
import SQLiteKit
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// Objects linked to a shared object after the share was made, through every relationship
    /// kind, on the owner's and the participant's side, and records of a share zone that name
    /// the owner's private objects (TripLog: Photo.tags ↔ Tag.photos is many-to-many).
    @Suite("Mirroring: links made after sharing, and links across zones", .timeLimit(.minutes(5)))
    struct LinksAfterSharingTests {
        typealias TripLog = TripLogTests
        static let coreDataZone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]

        /// The TripLog graph on O, shared with P (readWrite) and accepted: ids by entity, and the share zone.
        static func shared() async throws -> (Cloud, Device, Device, [String: String], String) {
            let (cloud, o, p) = try await TripLog.start()
            let ids = try await TripLog.graph(on: o)
            let created = try await o.call("share.create", ["objectID": .string(ids["Trip"]!), "participants": [["user": "alice", "permission": "readWrite"]]])
            let zone = try #require(created["zoneName"]?.stringValue)
            _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            return (cloud, o, p, ids, zone)
        }

        static func tagNames(_ cloud: Cloud, zone: JSONValue) async throws -> [String] {
            try await cloud.records(user: "owner", zone: zone).filter { $0["recordType"] == "CD_Tag" }
                .compactMap { $0["fields"]?["CD_name"]?["value"]?.stringValue }.sorted()
        }

        static func tagNames(of photo: JSONValue?, on device: Device, store: String? = nil) async throws -> [String] {
            let members = Set(photo?["values"]?["tags"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            return try await device.objects("Tag", store: store).filter { members.contains($0["objectID"]?.stringValue ?? "") }
                .compactMap { $0["values"]?["name"]?.stringValue }.sorted()
        }

        @Test("A participant's new tag on a shared photo goes into the share's zone with its link; the owner gets both, and nothing is left unsent")
        func participantsNewTagJoinsTheShare() async throws {
            let (cloud, o, p, _, zone) = try await Self.shared()
            let photoOnP = try #require(try await p.objects("Photo", store: "Shared").first?["objectID"]?.stringValue)
            _ = try await GraphShareTests.insert(p, "Tag", ["name": "lantern", "photos": [.string(photoOnP)]])
            try await p.send()
            #expect(try await p.pending() == 0)
            #expect(try await Self.tagNames(cloud, zone: ["zoneName": .string(zone)]) == ["lantern", "shrine"], "the tag went into the share's zone")
            #expect(try await p.status()["stores"]?.arrayValue?.allSatisfy { $0["unexportable"]?.arrayValue?.isEmpty ?? true } == true)
            try await o.fetch()
            #expect(try await Self.tagNames(of: try await o.objects("Photo").first, on: o) == ["lantern", "shrine"], "the owner sees the participant's tag on the photo")
            let doctor = try await MeowProcess.run("meowctl", ["doctor", "--socket", p.socket, "--json"])
            #expect(try JSONParser.parse(Array(doctor.stdout.utf8))["findings"]?.arrayValue?.isEmpty == true, "\(doctor.stdout)")
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("The owner's new tag on a shared photo joins the share; the participant sees it")
        func ownersNewTagJoinsTheShare() async throws {
            let (cloud, o, p, ids, zone) = try await Self.shared()
            _ = try await GraphShareTests.insert(o, "Tag", ["name": "autumn", "photos": [.string(ids["Photo"]!)]])
            try await o.send()
            #expect(try await Self.tagNames(cloud, zone: ["zoneName": .string(zone)]) == ["autumn", "shrine"])
            #expect(try await Self.tagNames(cloud, zone: Self.coreDataZone).isEmpty, "the new tag stayed private")
            try await p.fetch()
            #expect(try await Self.tagNames(of: try await p.objects("Photo", store: "Shared").first, on: p, store: "Shared") == ["autumn", "shrine"])
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("The owner's existing private tag linked to a shared photo moves into the share, as sharing the graph would; the participant sees it")
        func ownersExistingTagMovesIntoTheShare() async throws {
            let (cloud, o, p, ids, zone) = try await Self.shared()
            let food = try await GraphShareTests.insert(o, "Tag", ["name": "food"])
            try await o.send()
            #expect(try await Self.tagNames(cloud, zone: Self.coreDataZone) == ["food"])
            try await o.set(ids["Photo"]!, ["tags": [.string(ids["Tag"]!), .string(food)]])
            try await o.send()
            #expect(try await o.pending() == 0)
            #expect(try await Self.tagNames(cloud, zone: ["zoneName": .string(zone)]) == ["food", "shrine"], "the tag moved into the share's zone")
            #expect(try await Self.tagNames(cloud, zone: Self.coreDataZone).isEmpty)
            try await p.fetch()
            #expect(try await Self.tagNames(of: try await p.objects("Photo", store: "Shared").first, on: p, store: "Shared") == ["food", "shrine"])
            #expect(try await PendingLinkTests.waiting(p).isEmpty)
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("A participant's private tag linked to a shared photo is refused at save as a cross-store relationship (133010), and nothing is saved")
        func participantsPrivateTagIsRefused() async throws {
            let (cloud, o, p, _, _) = try await Self.shared()
            let mine = try await GraphShareTests.insert(p, "Tag", ["name": "mine"])
            try await p.send()
            let photoOnP = try #require(try await p.objects("Photo", store: "Shared").first)
            let tagOnP = try #require(try await p.objects("Tag", store: "Shared").first?["objectID"])
            let error = try await p.setFailing(photoOnP["objectID"]?.stringValue ?? "", ["tags": [tagOnP, .string(mine)]])
            #expect(error.code == .crossStoreRelationship, "\(error)")
            #expect(try await p.objects("Photo", store: "Shared").first?["values"]?["tags"] == [tagOnP], "the refused save changed nothing")
            #expect(try await p.pending() == 0)
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("An object and a link neither in the cloud nor queued while the device counts 0 pending: sync.status lists them as unsent and doctor reports each")
        func doctorReportsUnsent() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("o-data")
            var o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", TripLog.jsonModel], dataDirectory: data)
            let tag = try await GraphShareTests.insert(o, "Tag", ["name": "lost"])
            _ = try await GraphShareTests.insert(o, "Photo", ["caption": "kept", "rating": 1, "tags": [.string(tag)]])
            try await o.send()
            #expect(await o.stop() == 0)
            // What a mirror that found no zone for them would leave: rows with no record and no queue entry.
            let files = try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.hasSuffix("-Private.sqlite") }
            let database = try Database(path: "\(data)/\(try #require(files.first))")
            try database.execute("DELETE FROM mirror_meta WHERE entity IN ('Tag', '_Photo_tags')")
            o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", TripLog.jsonModel], dataDirectory: data)
            #expect(try await o.pending() == 0)
            let unsent = try await o.call("sync.status", ["unsent": true])["stores"]?.arrayValue?.flatMap { $0["unsent"]?.arrayValue ?? [] } ?? []
            #expect(unsent.count == 2 && unsent.contains(.string(tag)), "\(unsent)")
            #expect(try await o.status()["stores"]?.arrayValue?.first?["unsent"] == nil, "listed only when asked")
            let doctor = try await MeowProcess.run("meowctl", ["doctor", "--socket", o.socket, "--json"])
            #expect(doctor.status == 1)
            let findings = try JSONParser.parse(Array(doctor.stdout.utf8))["findings"]?.arrayValue ?? []
            #expect(findings.filter { $0["kind"] == "unsent" }.count == 2, "\(doctor.stdout)")
            #expect(findings.contains { $0["kind"] == "unsent" && $0["objectID"] == .string(tag) })
            await ConflictTests.stop(cloud, o)
        }

        @Test("A participant's raw CDMR and to-one naming the owner's private objects link nothing on the owner's device; a new share takes nothing private, and the participant sees nothing private")
        func shareZoneRecordsNamingPrivateObjectsLinkNothing() async throws {
            let (cloud, o, p, ids, zone) = try await Self.shared()
            _ = try await GraphShareTests.insert(o, "Trip", ["name": "Secret trip", "currency": "EUR"])
            _ = try await GraphShareTests.insert(o, "Tag", ["name": "secret"])
            try await o.send()
            let privateRecords = try await cloud.records(user: "owner", zone: Self.coreDataZone)
            let tripName = try #require(privateRecords.first { $0["recordType"] == "CD_Trip" }?["recordName"]?.stringValue)
            let tagName = try #require(privateRecords.first { $0["recordType"] == "CD_Tag" }?["recordName"]?.stringValue)
            let shareZone: JSONValue = ["zoneName": .string(zone), "ownerName": "owner"]
            let photoName = try #require(try await cloud.records(user: "owner", zone: ["zoneName": .string(zone)])
                .first { $0["recordType"] == "CD_Photo" }?["recordName"]?.stringValue)

            // The participant writes into the share zone directly: a link to the private tag, a day of the private trip.
            func text(_ value: String) -> JSONValue { ["type": "string", "value": .string(value)] }
            let alice = try await cloud.connect("alice-secret")
            defer { alice.close() }
            _ = try await alice.call("records.modify", ["database": "shared", "saves": [
                ["recordName": "planted-link", "recordType": "CDMR", "zoneID": shareZone, "fields": [
                    "CD_entityNames": text("Photo:Tag"), "CD_relationships": text("tags:photos"), "CD_recordNames": text("\(photoName):\(tagName)")]],
                ["recordName": "planted-day", "recordType": "CD_Day", "zoneID": shareZone, "fields": [
                    "CD_entityName": text("Day"), "CD_notes": text("planted"), "CD_trip": text(tripName)]],
            ]])
            try await o.fetch()
            #expect(try await Self.tagNames(of: try await o.objects("Photo", predicate: "caption == 'Torii gates'").first, on: o) == ["shrine"],
                    "the share zone's link named a private tag and was made")
            #expect(try await o.objects("Tag", predicate: "name == 'secret'").first?["values"]?["photos"] == [])
            let planted = try #require(try await o.objects("Day", predicate: "notes == 'planted'").first)
            #expect(planted["values"]?["trip"] == .null, "the share zone's day was put under the private trip")
            let waiting = try await PendingLinkTests.waiting(o)
            #expect(Set(waiting.compactMap { $0["target"]?.stringValue }) == [tripName, tagName], "both wait as pending links")

            // The owner stops the share and shares the trip again: nothing private moves.
            _ = try await o.call("share.stop", ["zoneName": .string(zone)])
            let again = try await o.call("share.create", ["objectID": .string(ids["Trip"]!), "participants": [["user": "alice", "permission": "readWrite"]]])
            let newZone = try #require(again["zoneName"]?.stringValue)
            let moved = try await cloud.records(user: "owner", zone: ["zoneName": .string(newZone)])
            #expect(!moved.contains { $0["recordName"]?.stringValue == tripName || $0["recordName"]?.stringValue == tagName }, "a private object moved into the share")
            #expect(try await Self.tagNames(cloud, zone: Self.coreDataZone) == ["secret"])
            _ = try await p.call("share.accept", ["zoneName": .string(newZone), "ownerName": "owner"])
            #expect(try await p.objects("Trip", store: "Shared").compactMap { $0["values"]?["name"]?.stringValue } == ["Kyoto in autumn"])
            #expect(try await p.objects("Tag", store: "Shared").compactMap { $0["values"]?["name"]?.stringValue } == ["shrine"])
            await ConflictTests.stop(cloud, o, p)
        }
    }
}
