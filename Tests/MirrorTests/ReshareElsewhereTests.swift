import CloudWire
import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// The owner's two devices A and B and a participant P: a share made on one device is
    /// stopped and made again (a new zone) on the other. Both of the owner's devices must agree
    /// on where the session's graph lives and on which shares exist, whichever device made or
    /// stopped them.
    @Suite("Mirroring: a share stopped and made again on the owner's other device", .timeLimit(.minutes(3)))
    struct ReshareElsewhereTests {
        /// Who shares first, who stops and shares again, and whether the first device fetches
        /// between the stop and the new share.
        enum Plan: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case bStopsAndSharesAgain, aStopsBSharesAgain, bStopsAndSharesAgainWhileAIsOffline
            var testDescription: String { rawValue }
        }

        @Test("A shares; B (or A) stops and B shares again: A, B and P converge on the new zone", arguments: Plan.allCases)
        func reshareOnTheOtherDevice(plan: Plan) async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let p = try await Device.start("P", user: "alice", cloud: cloud)
            let session = try await a.insertSession("mochi")
            try await a.insertEvents(["bg-1", "bg-2"], session: session)
            try await a.send()
            try await b.fetch()
            let first = try #require(try await a.call("share.create", ["objectID": .string(session),
                                                                        "participants": [["user": "alice", "permission": "readWrite"]]])["zoneName"]?.stringValue)
            _ = try await p.call("share.accept", ["zoneName": .string(first), "ownerName": "owner"])
            try await Self.settle(a, b, p)
            let bSession = try await b.objectID(id: "mochi", entity: "CareSession")
            // B knows the graph is shared: a second share of it would split the first.
            let refused = try await b.failure("share.create", ["objectID": .string(bSession)])
            #expect(refused.code == .alreadyShared && refused.details["zoneName"] == .string(first), "\(refused)")

            let stopper = plan == .aStopsBSharesAgain ? a : b
            _ = try await stopper.call("share.stop", ["zoneName": .string(first)])
            if plan != .bStopsAndSharesAgainWhileAIsOffline { try await Self.settle(a, b, p) }
            try await b.fetch()
            let second = try #require(try await b.call("share.create", ["objectID": .string(bSession),
                                                                         "participants": [["user": "alice", "permission": "readWrite"]]])["zoneName"]?.stringValue)
            #expect(second != first)
            _ = try await p.call("share.accept", ["zoneName": .string(second), "ownerName": "owner"])
            try await Self.settle(a, b, p)

            #expect(try await cloud.eventIDs(zoneName: second) == ["bg-1", "bg-2"])
            #expect(try await cloud.eventIDs(zoneName: first).isEmpty)
            #expect(try await p.objects("CareEvent", store: "Shared").map { $0["zone"] } == [.string(second), .string(second)])
            for device in [a, b] {
                // Each owner's device sends its edit to the record where it lives now.
                let note = "noted on \(device.name)"
                try await device.set(try await device.objectID(id: "bg-1"), ["note": .string(note)])
                try await device.send()
                #expect(try await cloud.eventField("CD_note", of: "bg-1", zoneName: second) == .string(note), "\(device.name)")
                let owned = try await device.call("share.owned")["shares"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue }
                #expect(owned == [second], "\(device.name)")
                let again = try await device.failure("share.create", ["objectID": .string(try await device.objectID(id: "mochi", entity: "CareSession"))])
                #expect(again.code == .alreadyShared && again.details["zoneName"] == .string(second), "\(device.name): \(again)")
            }
            try await Self.settle(a, b, p)
            #expect(try await p.ids("CareEvent", store: "Shared") == ["bg-1", "bg-2"])
            #expect(try await p.call("share.list")["shares"]?.arrayValue?.compactMap { $0["zoneName"]?.stringValue } == [second])
            for (device, user) in [(a, "owner"), (b, "owner"), (p, "alice")] { try await Self.expectClean(device, cloud, user: user) }

            // A, which did not make the new share, can stop it and share again.
            _ = try await a.call("share.stop", ["zoneName": .string(second)])
            let third = try await a.share(session)
            try await Self.settle(a, b, p)
            #expect(try await cloud.eventIDs(zoneName: third) == ["bg-1", "bg-2"])
            #expect(try await cloud.eventIDs(zoneName: second).isEmpty)
            for device in [a, b] {
                let again = try await device.failure("share.create", ["objectID": .string(try await device.objectID(id: "mochi", entity: "CareSession"))])
                #expect(again.code == .alreadyShared && again.details["zoneName"] == .string(third), "\(device.name): \(again)")
            }
            for (device, user) in [(a, "owner"), (b, "owner"), (p, "alice")] { try await Self.expectClean(device, cloud, user: user) }
            await ConflictTests.stop(cloud, a, b, p)
        }

        static func settle(_ devices: Device...) async throws {
            for _ in 0..<2 {
                for device in devices {
                    try await device.send()
                    try await device.fetch()
                }
            }
        }

        /// `meowctl doctor` (with the cloud) finds nothing and `meowctl diff` finds the device's stores and the cloud identical.
        static func expectClean(_ device: Device, _ cloud: Cloud, user: String) async throws {
            let target = ["--socket", device.socket, "--cloud", cloud.socket, "--credential", "\(user)-secret", "--json"]
            let doctor = try await MeowProcess.run("meowctl", ["doctor"] + target)
            #expect(doctor.status == 0, "\(device.name) doctor: \(doctor.stdout) \(doctor.stderr)")
            let diff = try await MeowProcess.run("meowctl", ["diff"] + target)
            #expect(diff.status == 0, "\(device.name) diff: \(diff.stdout) \(diff.stderr)")
            #expect(try JSONParser.parse(Array(diff.stdout.utf8))["identical"] == true, "\(device.name) diff: \(diff.stdout)")
        }
    }
}
