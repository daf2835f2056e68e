import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// A share takes the whole object graph, to any depth and both ways along relationships, and
    /// an object related later to a shared one lands in that share, on a three-level model
    /// (Trip → Day → Photo) that is not MeowCare's.
    @Suite("Mirroring: whole-graph shares on a three-level model", .timeLimit(.minutes(5)))
    struct GraphShareTests {
        static let model: JSONValue = [
            "name": "Travel",
            "entities": [
                ["name": "Trip", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "days", "destination": "Day", "toMany": true, "inverse": "trip"]]],
                ["name": "Day", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "trip", "destination": "Trip", "inverse": "days"],
                                   ["name": "photos", "destination": "Photo", "toMany": true, "inverse": "day"]]],
                ["name": "Photo", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "day", "destination": "Day", "inverse": "photos"]]],
            ],
            "configurations": [
                ["name": "Private", "scope": "private", "entities": ["Trip", "Day", "Photo"]],
                ["name": "Shared", "scope": "shared", "entities": ["Trip", "Day", "Photo"]],
            ],
        ]

        /// A cloud, owner O and participant P on the travel model.
        static func start() async throws -> (Cloud, Device, Device) {
            let cloud = try await Cloud.start()
            let path = cloud.directory.file("travel.json")
            try JSONWriter.text(model).write(toFile: path, atomically: true, encoding: .utf8)
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", path])
            let p = try await Device.start("P", user: "alice", cloud: cloud, extra: ["--model", path])
            return (cloud, o, p)
        }

        /// Inserts and saves one object; its permanent ID.
        static func insert(_ device: Device, _ entity: String, _ values: JSONValue) async throws -> String {
            let context = try await device.context()
            let temporary = try #require(try await device.call("object.insert", ["context": .string(context), "entity": .string(entity),
                                                                                "values": values])["objectID"]?.stringValue)
            let saved = try await device.call("context.save", ["context": .string(context)])
            try await device.call("context.close", ["context": .string(context)])
            return try #require(saved["inserted"]?.arrayValue?.first { $0["temporaryID"]?.stringValue == temporary }?["objectID"]?.stringValue)
        }

        /// Trip t1 with days d1 (photos p1, p2) and d2 (photo p3), saved and sent: the objectIDs by id.
        static func trip(on o: Device) async throws -> [String: String] {
            var ids: [String: String] = [:]
            ids["t1"] = try await insert(o, "Trip", ["id": "t1"])
            for day in ["d1", "d2"] { ids[day] = try await insert(o, "Day", ["id": .string(day), "trip": .string(ids["t1"]!)]) }
            for (photo, day) in [("p1", "d1"), ("p2", "d1"), ("p3", "d2")] {
                ids[photo] = try await insert(o, "Photo", ["id": .string(photo), "day": .string(ids[day]!)])
            }
            try await o.send()
            return ids
        }

        /// The ids of the records in one of the owner's zones.
        static func ids(_ cloud: Cloud, zone: String) async throws -> [String] {
            try await cloud.records(user: "owner", zone: ["zoneName": .string(zone)]).compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue }.sorted()
        }

        @Test("Sharing a trip moves its days and their photos into the share; the participant gets all three levels")
        func sharingTheTopMovesEveryLevel() async throws {
            let (cloud, o, p) = try await Self.start()
            let ids = try await Self.trip(on: o)
            let created = try await o.call("share.create", ["objectID": .string(ids["t1"]!), "participants": [["user": "alice", "permission": "readWrite"]]])
            #expect(created["movedRecords"] == 6)
            let zone = try #require(created["zoneName"]?.stringValue)
            #expect(try await Self.ids(cloud, zone: zone) == ["d1", "d2", "p1", "p2", "p3", "t1"])
            #expect(try await cloud.records(user: "owner").isEmpty, "a record was left in Core Data's zone")
            _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            #expect(try await p.objects("Photo", store: "Shared").compactMap { $0["values"]?["id"]?.stringValue } == ["p1", "p2", "p3"])
            #expect(try await p.objects("Day", store: "Shared").count == 2)
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("Sharing a day takes the whole graph: its trip, the trip's other days and their photos")
        func sharingAMiddleObjectTakesTheWholeGraph() async throws {
            let (cloud, o, p) = try await Self.start()
            let ids = try await Self.trip(on: o)
            let created = try await o.call("share.create", ["objectID": .string(ids["d1"]!)])
            #expect(created["rootRecordName"] != nil)
            #expect(created["movedRecords"] == 6)
            let zone = try #require(created["zoneName"]?.stringValue)
            #expect(try await Self.ids(cloud, zone: zone) == ["d1", "d2", "p1", "p2", "p3", "t1"])
            // The graph is in a live share now: sharing another of its objects is refused.
            let again = try await o.failure("share.create", ["objectID": .string(ids["p3"]!)])
            #expect(again.code == "alreadyShared")
            #expect(again.details["zoneName"]?.stringValue == zone)
            await ConflictTests.stop(cloud, o, p)
        }

        @Test("A photo created later under a shared trip's day lands in the share zone, on the owner's device and the participant's")
        func laterObjectsFollowTheShareAtAnyDepth() async throws {
            let (cloud, o, p) = try await Self.start()
            let ids = try await Self.trip(on: o)
            let zone = try #require(try await o.call("share.create", ["objectID": .string(ids["t1"]!),
                                                                      "participants": [["user": "alice", "permission": "readWrite"]]])["zoneName"]?.stringValue)
            _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            // Owner side: a new photo two levels below the shared root.
            _ = try await Self.insert(o, "Photo", ["id": "p4", "day": .string(ids["d2"]!)])
            try await o.send()
            #expect(try await Self.ids(cloud, zone: zone).contains("p4"))
            #expect(try await cloud.records(user: "owner").isEmpty, "the new photo went to Core Data's zone")
            // Participant side: a new day and a photo on it, in the shared store.
            let trip = try #require(try await p.objects("Trip", store: "Shared").first?["objectID"]?.stringValue)
            let day = try await Self.insert(p, "Day", ["id": "d3", "trip": .string(trip)])
            _ = try await Self.insert(p, "Photo", ["id": "p5", "day": .string(day)])
            try await p.send()
            #expect(try await Self.ids(cloud, zone: zone) == ["d1", "d2", "d3", "p1", "p2", "p3", "p4", "p5", "t1"])
            try await o.fetch()
            #expect(try await o.objects("Photo").compactMap { $0["values"]?["id"]?.stringValue } == ["p1", "p2", "p3", "p4", "p5"])
            await ConflictTests.stop(cloud, o, p)
        }

        /// Over the server's per-request limit the graph cannot move in one request: its leaders
        /// (the root and the top of every chain, here the trip) move with the share and each
        /// photo follows its day and trip, two levels down.
        @Test("A graph over the server's limit moves its leaders with the share and every level follows")
        func graphOverTheLimitFollowsItsLeaders() async throws {
            let (cloud, o, p) = try await Self.start()
            _ = try await cloud.admin("admin.setLimits", ["maxItemsPerRequest": 6])
            let ids = try await Self.trip(on: o)
            let created = try await o.call("share.create", ["objectID": .string(ids["d1"]!)])
            #expect(created["pendingRecords"] == 0)
            #expect(created["movedRecords"] == 6)
            let zone = try #require(created["zoneName"]?.stringValue)
            #expect(try await Self.ids(cloud, zone: zone) == ["d1", "d2", "p1", "p2", "p3", "t1"])
            #expect(try await cloud.records(user: "owner").isEmpty, "a record was left in Core Data's zone")
            await ConflictTests.stop(cloud, o, p)
        }

        /// `meowctl doctor --json` on `device`, with the cloud as `user`: the kinds it found.
        static func doctorKinds(_ device: Device, _ cloud: Cloud, user: String) async throws -> [String] {
            let run = try await MeowProcess.run("meowctl", ["doctor", "--socket", device.socket, "--cloud", cloud.socket, "--credential", "\(user)-secret", "--json"])
            let report = try JSONParser.parse(Array(run.stdout.utf8))
            #expect(report["checks"]?.arrayValue?.contains { $0["name"] == "cloudShareGraphSplit" } == true, "\(run.stderr)")
            return report["findings"]?.arrayValue?.compactMap { $0["kind"]?.stringValue } ?? []
        }

        @Test("doctor names a relationship that reaches from one share into another zone, on the participant's store and in the cloud")
        func doctorFindsSplitGraphs() async throws {
            let (cloud, o, p) = try await Self.start()
            let ids = try await Self.trip(on: o)
            let t2 = try await Self.insert(o, "Trip", ["id": "t2"])
            _ = try await Self.insert(o, "Day", ["id": "d9", "trip": .string(t2)])
            try await o.send()
            for trip in [ids["t1"]!, t2] {
                let zone = try #require(try await o.call("share.create", ["objectID": .string(trip),
                                                                          "participants": [["user": "alice", "permission": "readWrite"]]])["zoneName"]?.stringValue)
                _ = try await p.call("share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            }
            #expect(try await Self.doctorKinds(o, cloud, user: "owner").isEmpty)
            #expect(try await Self.doctorKinds(p, cloud, user: "alice").isEmpty)
            // The participant points a photo of the first share at a day of the second.
            let photo = try await p.objectID(id: "p1", entity: "Photo")
            try await p.set(photo, ["day": .string(try await p.objectID(id: "d9", entity: "Day"))])
            try await p.send()
            let found = try await Self.doctorKinds(p, cloud, user: "alice")
            #expect(found.contains("shareGraphSplit"))
            #expect(found.contains("cloudShareGraphSplit"))
            #expect(try await Self.doctorKinds(o, cloud, user: "owner").contains("cloudShareGraphSplit"))
            await ConflictTests.stop(cloud, o, p)
        }
    }
}
