import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// What the random-kill workload (`RandomWorkloadKillTests`) found, each made exact: the
    /// owner's two devices sharing, stopping and sharing again; a many-to-many link sent when
    /// its device is killed before it applies the cloud's answer.
    @Suite("Mirroring: findings of the random-kill workload", .timeLimit(.minutes(3)))
    struct KillWorkloadFindingsTests {
        static let model = TripLogTests.jsonModel

        /// A trip with a day on O1, sent, and fetched by O2: the trip's objectID on each.
        static func trip(_ o1: Device, _ o2: Device) async throws -> (String, String) {
            let trip = try await GraphShareTests.insert(o1, "Trip", ["id": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "name": "Kyoto"])
            _ = try await GraphShareTests.insert(o1, "Day", ["id": "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "notes": "Fushimi", "trip": .string(trip)])
            try await o1.send()
            try await o2.fetch()
            let onO2 = try #require(try await o2.objects("Trip").first?["objectID"]?.stringValue)
            return (trip, onO2)
        }

        @Test("A share one of the owner's devices made and the other stopped can be made again by the first, once it has fetched the stop")
        func shareAgainAfterTheOtherDeviceStopped() async throws {
            let cloud = try await Cloud.start()
            let o1 = try await Device.start("O1", user: "owner", cloud: cloud, extra: ["--model", Self.model])
            let o2 = try await Device.start("O2", user: "owner", cloud: cloud, extra: ["--model", Self.model])
            let (trip, _) = try await Self.trip(o1, o2)
            var zone = try await o1.share(trip)
            // First O1 knows the share zone only from making it (its first fetch of it is from
            // nil, which lists no deletion); the second time it has fetched it (the share's
            // deletion is listed).
            for round in 0..<2 {
                try await o2.now()
                try await o2.call("share.stop", ["zoneName": .string(zone)])
                try await o1.now()
                let again = try await o1.call("share.create", ["objectID": .string(trip), "participants": [["user": "alice", "permission": "readWrite"]]])
                let newZone = try #require(again["zoneName"]?.stringValue)
                #expect(newZone != zone, "round \(round): a new share zone")
                let owned = try await o1.call("share.owned")["shares"]?.arrayValue ?? []
                #expect(owned.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } == [newZone], "round \(round): only the new share is live")
                zone = newZone
                try await o1.now()
            }
            await ConflictTests.stop(cloud, o1, o2)
        }

        /// The tags of the one photo on `device`, as that device's object IDs, and its caption.
        static func photo(_ device: Device) async throws -> (tags: [JSONValue], caption: JSONValue?) {
            let values = try #require(try await device.objects("Photo").first?["values"], "\(device.name) has no photo")
            return (values["tags"]?.arrayValue ?? [], values["caption"])
        }

        @Test("A device killed after the cloud answered the batch with its new photo, tag and link keeps the link once restarted, and after another device's edit of the photo",
              arguments: ["mirror.afterServerReply:1"])
        func linkSurvivesAKillBeforeTheVerdict(crashAt: String) async throws {
            let cloud = try await Cloud.start()
            let o1 = try await Device.start("O1", user: "owner", cloud: cloud, extra: ["--model", Self.model])
            let directory = cloud.directory.file("o2")
            let o2 = try await Device.start("O2", user: "owner", cloud: cloud, extra: ["--model", Self.model], dataDirectory: directory,
                                            environment: ["MEOW_CRASH_AT": crashAt])
            _ = try await Self.trip(o1, o2)
            let day = try #require(try await o2.objects("Day").first?["objectID"])
            let context = try await o2.context()
            let tag = try #require(try await o2.call("object.insert", ["context": .string(context), "entity": "Tag",
                                                                       "values": ["id": "C56A4180-65AA-42EC-A945-5FD21DEC0538", "name": "shrine"]])["objectID"])
            _ = try await o2.call("object.insert", ["context": .string(context), "entity": "Photo",
                                                    "values": ["id": "1B4E28BA-2FA1-11D2-883F-0016D3CCA427", "caption": "Torii", "day": day, "tags": [tag]]])
            try await o2.call("context.save", ["context": .string(context)])
            // The send (and, for a second hit, the send again after the first answer) dies.
            for _ in 0..<2 where o2.process.isRunning { _ = try? await o2.send() }
            #expect(await o2.process.waitForExit() == 128 + 9, "O2 died at \(crashAt)")
            let restarted = try await Device.start("O2", user: "owner", cloud: cloud, extra: ["--model", Self.model], dataDirectory: directory)
            try await restarted.now()
            #expect(try await Self.photo(restarted).tags.count == 1, "O2 keeps the link it made")
            try await o1.now()
            #expect(try await Self.photo(o1).tags.count == 1, "the link reached O1")
            try await o1.set(try #require(try await o1.objects("Photo").first?["objectID"]?.stringValue), ["caption": "Torii at dawn"])
            try await o1.send()
            try await restarted.now()
            let onO2 = try await Self.photo(restarted)
            #expect(onO2.caption == "Torii at dawn")
            #expect(onO2.tags.count == 1, "O1's edit of the photo keeps O2's link on O2")
            await ConflictTests.stop(cloud, o1, restarted)
        }
    }
}
