import CloudWire
import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// A refused share request changes nothing, on the cloud or on the device, for every share
    /// op of both services; the corrected request then succeeds. "Nothing" is read as the
    /// whole state: the cloud's snapshot (every zone, record, share, participant and change
    /// log) and each device's snapshot (its stores and the mirror's queue, tokens and copies).
    @Suite("Mirroring: refused share requests change nothing", .timeLimit(.minutes(5)))
    struct ShareRefusalTests {
        /// Everything the cloud and the devices hold.
        struct World: Equatable {
            var cloud: JSONValue
            var devices: [JSONValue]

            /// The tables that differ from `before`'s, by name ("cloud.records", "device 0 Private.mirror_meta").
            func changes(since before: World) -> [String] {
                var names: [String] = []
                func compare(_ label: String, _ now: JSONValue?, _ then: JSONValue?) {
                    let keys = Set((now?.objectValue ?? [:]).keys).union((then?.objectValue ?? [:]).keys)
                    for key in keys.sorted() where now?[key] != then?[key] { names.append("\(label).\(key)") }
                }
                compare("cloud", cloud["tables"], before.cloud["tables"])
                for (index, device) in devices.enumerated() {
                    let stores = device["stores"]?.arrayValue ?? []
                    for (position, store) in stores.enumerated() {
                        let then = before.devices.indices.contains(index) ? before.devices[index]["stores"]?.arrayValue?.dropFirst(position).first : nil
                        compare("device \(index) \(store["name"]?.stringValue ?? "?")", store["tables"], then?["tables"])
                    }
                }
                return names
            }
        }

        static func world(_ cloud: Cloud, _ devices: [Device]) async throws -> World {
            var states: [JSONValue] = []
            for device in devices { states.append(try await device.call("snapshot.export")["snapshot"] ?? .null) }
            return World(cloud: try await cloud.admin("admin.exportSnapshot", [:])["snapshot"] ?? .null, devices: states)
        }

        /// Sends `op` expecting `code`; checks that the world is as it was.
        static func refused(_ op: String, _ params: JSONValue, code: ErrorCode, on device: Device, cloud: Cloud, devices: [Device],
                            sourceLocation: SourceLocation = #_sourceLocation) async throws -> WireError {
            let before = try await world(cloud, devices)
            let error = try await device.failure(op, params)
            #expect(error.code == code, "\(op) \(params): \(error.code) \(error.message)", sourceLocation: sourceLocation)
            let after = try await world(cloud, devices)
            #expect(after == before, "\(op) \(params) changed \(after.changes(since: before))", sourceLocation: sourceLocation)
            return error
        }

        @Test("Every refused share op of the store-service (create, invite, setPermission, removeParticipant, stop, accept, leave) changes nothing, and the corrected request succeeds")
        func storeServiceShareOpsChangeNothingWhenRefused() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let p = try await Device.start("P", user: "alice", cloud: cloud)
            let devices = [o, p]
            let session = try await o.insertSession("mochi")
            try await o.insertEvents(["e1", "e2"], session: session)
            try await o.send()

            // share.create: an unknown participant (after a good one), a bad permission, the owner itself.
            let unknown = try await Self.refused("share.create", ["objectID": .string(session), "participants": [
                ["user": "alice", "permission": "readWrite"], ["user": "nobody", "permission": "readOnly"]]],
                code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            #expect(unknown.message.contains("nobody"), "\(unknown.message)")
            let bad = try await Self.refused("share.create", ["objectID": .string(session), "participants": [["user": "alice", "permission": "owner"]]],
                                             code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            #expect(bad.message.contains("readOnly or readWrite"), "\(bad.message)")
            _ = try await Self.refused("share.create", ["objectID": .string(session), "participants": [["user": "owner", "permission": "readOnly"]]],
                                       code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.create", ["objectID": .string(session), "participants": [
                ["user": "alice", "permission": "readOnly"], ["user": "alice", "permission": "readWrite"]]], code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            let long = try await Self.refused("share.create", ["objectID": .string(session), "participants": [["user": .string(String(repeating: "x", count: 5000)), "permission": "readOnly"]]],
                                              code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            #expect(long.message.count < 300, "a sent name is quoted cut short")
            _ = try await cloud.admin("admin.setLimits", ["maxParticipants": 2])
            _ = try await Self.refused("share.create", ["objectID": .string(session), "participants": [
                ["user": "alice", "permission": "readOnly"], ["user": "bob", "permission": "readOnly"]]], code: .tooManyParticipants, on: o, cloud: cloud, devices: devices)
            _ = try await cloud.admin("admin.setLimits", ["maxParticipants": 100])
            // The corrected retry succeeds (it was alreadyShared when the refusal left a share).
            let created = try await o.call("share.create", ["objectID": .string(session), "participants": [["user": "alice", "permission": "readWrite"]]])
            let zone = try #require(created["zoneName"]?.stringValue)
            #expect(created["movedRecords"] == 3)
            #expect(try await cloud.eventIDs(zoneName: zone) == ["e1", "e2"])

            // The owner's participant ops.
            let z: JSONValue = .string(zone)
            _ = try await Self.refused("share.invite", ["zoneName": z, "user": "nobody", "permission": "readOnly"], code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.invite", ["zoneName": z, "user": "bob", "permission": "everything"], code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.invite", ["zoneName": "com.apple.coredata.cloudkit.share.none", "user": "bob", "permission": "readOnly"],
                                       code: .zoneNotFound, on: o, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.setPermission", ["zoneName": z, "user": "bob", "permission": "readOnly"], code: .unknownItem, on: o, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.setPermission", ["zoneName": z, "user": "alice", "permission": "all"], code: .invalidArguments, on: o, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.removeParticipant", ["zoneName": z, "user": "bob"], code: .unknownItem, on: o, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.stop", ["zoneName": "com.apple.coredata.cloudkit.share.none"], code: .zoneNotFound, on: o, cloud: cloud, devices: devices)
            _ = try await o.call("share.invite", ["zoneName": z, "user": "bob", "permission": "readOnly"])
            _ = try await o.call("share.setPermission", ["zoneName": z, "user": "bob", "permission": "readWrite"])
            _ = try await o.call("share.removeParticipant", ["zoneName": z, "user": "bob"])

            // The participant's: a wrong owner, an unknown zone; leaving before accepting is
            // allowed (an invitee declines), so a wrong owner stands for leave's refusal.
            // P's first contact with the cloud records its account; that is sign-in, not the ops'.
            _ = try await p.call("share.invitations")
            _ = try await Self.refused("share.accept", ["zoneName": z, "ownerName": "bob"], code: .zoneNotFound, on: p, cloud: cloud, devices: devices)
            _ = try await Self.refused("share.accept", ["zoneName": "com.apple.coredata.cloudkit.share.none", "ownerName": "owner"], code: .zoneNotFound,
                                       on: p, cloud: cloud, devices: devices)
            _ = try await p.call("share.accept", ["zoneName": z, "ownerName": "owner"])
            #expect(try await p.ids(store: "Shared") == ["e1", "e2"])
            _ = try await Self.refused("share.leave", ["zoneName": z, "ownerName": "bob"], code: .zoneNotFound, on: p, cloud: cloud, devices: devices)
            _ = try await p.call("share.leave", ["zoneName": z, "ownerName": "owner"])
            #expect(try await p.ids(store: "Shared") == [])
            _ = try await o.call("share.stop", ["zoneName": z])
            await ConflictTests.stop(cloud, o, p)
        }

        /// The cloud refusing the move itself (after the share zone was made and the graph saved
        /// where it is) leaves no share and no empty share zone; the graph stays where it was.
        @Test("A share.create whose move the cloud refuses leaves no share and no share zone; the retry shares")
        func refusedMoveLeavesNoShareZone() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let session = try await o.insertSession("mochi")
            try await o.insertEvents(["e1", "e2"], session: session)
            try await o.send()
            let owner = try await cloud.connect("owner-secret")
            defer { owner.close() }
            func zones() async throws -> [String] {
                try await owner.call("zones.fetch", ["database": "private"])["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue }.sorted() ?? []
            }
            let zonesBefore = try await zones()
            _ = try await cloud.admin("admin.injectFault", ["op": "records.modify", "recordType": "cloudkit.share", "code": "quotaExceeded", "count": 1])
            let error = try await o.failure("share.create", ["objectID": .string(session), "participants": [["user": "alice", "permission": "readOnly"]]])
            #expect(error.code == .quotaExceeded, "\(error.message)")
            #expect(try await zones() == zonesBefore, "the share zone made for the refused share is left")
            #expect(try await owner.call("shares.owned", [:])["shares"] == [])
            #expect(try await cloud.eventIDs(zoneName: "com.apple.coredata.cloudkit.zone") == ["e1", "e2"])
            #expect(try await o.pending() == 0)
            let created = try await o.call("share.create", ["objectID": .string(session), "participants": [["user": "alice", "permission": "readOnly"]]])
            #expect(created["movedRecords"] == 3)
            #expect(try await cloud.eventIDs(zoneName: try #require(created["zoneName"]?.stringValue)) == ["e1", "e2"])
            await ConflictTests.stop(cloud, o)
        }

        @Test("Every refused share op of the sync-service (participants.add/setPermission/remove, shares.setPublicPermission/accept/leave, participants.validate) changes nothing")
        func syncServiceShareOpsChangeNothingWhenRefused() async throws {
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let session = try await o.insertSession("mochi")
            try await o.insertEvents(["e1"], session: session)
            try await o.send()
            let zone = try await o.share(session)
            let owner = try await cloud.connect("owner-secret")
            let bob = try await cloud.connect("bob-secret")
            defer { owner.close(); bob.close() }
            let z: JSONValue = ["zoneName": .string(zone)]
            let theirs: JSONValue = ["zoneName": .string(zone), "ownerName": "owner"]
            let cases: [(WireClient, String, JSONValue, ErrorCode)] = [
                (owner, "participants.add", ["zoneID": z, "user": "nobody", "permission": "readOnly"], .invalidArguments),
                (owner, "participants.add", ["zoneID": z, "user": "alice", "permission": "none"], .invalidArguments),
                (owner, "participants.add", ["zoneID": z, "user": "owner", "permission": "readOnly"], .invalidArguments),
                (owner, "participants.add", ["zoneID": z, "shareName": "other", "user": "alice", "permission": "readOnly"], .unknownItem),
                (owner, "participants.add", ["zoneID": ["zoneName": "nope"], "user": "alice", "permission": "readOnly"], .zoneNotFound),
                (owner, "participants.add", ["database": "shared", "zoneID": z, "user": "alice", "permission": "readOnly"], .permissionFailure),
                (owner, "participants.setPermission", ["zoneID": z, "user": "bob", "permission": "readOnly"], .unknownItem),
                (owner, "participants.remove", ["zoneID": z, "user": "bob"], .unknownItem),
                (owner, "shares.setPublicPermission", ["zoneID": z, "permission": "public"], .invalidArguments),
                (bob, "shares.accept", ["zoneID": theirs], .permissionFailure),
                (bob, "shares.leave", ["zoneID": theirs], .unknownItem),
                (bob, "participants.add", ["zoneID": z, "user": "alice", "permission": "readOnly"], .zoneNotFound),
                (owner, "participants.validate", ["participants": [["user": "alice", "permission": "readOnly"], ["user": "nobody", "permission": "readOnly"]]],
                 .invalidArguments),
            ]
            for (client, op, params, code) in cases {
                let before = try await Self.world(cloud, [o])
                do {
                    _ = try await client.call(op, params)
                    Issue.record("\(op) \(params) was accepted")
                } catch {
                    #expect(error.code == code, "\(op) \(params): \(error.code) \(error.message)")
                }
                let after = try await Self.world(cloud, [o])
                #expect(after == before, "\(op) \(params) changed \(after.changes(since: before))")
            }
            // Corrected, they succeed.
            #expect(try await owner.call("participants.validate", ["participants": [["user": "alice", "permission": "readOnly"]]])["participants"]?.arrayValue?.count == 1)
            _ = try await owner.call("participants.add", ["zoneID": z, "user": "bob", "permission": "readOnly"])
            _ = try await bob.call("shares.accept", ["zoneID": theirs])
            _ = try await owner.call("participants.setPermission", ["zoneID": z, "user": "bob", "permission": "readWrite"])
            _ = try await bob.call("shares.leave", ["zoneID": theirs])
            _ = try await owner.call("shares.setPublicPermission", ["zoneID": z, "permission": "readOnly"])
            await ConflictTests.stop(cloud, o)
        }
    }
}
