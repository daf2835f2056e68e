import Foundation
import MeowWire
import SQLiteKit
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// CloudKit names a zone by (zoneName, ownerName) and a record by (recordName, zoneID): a
    /// device must never take another owner's zone or record for one it holds. The attacker is
    /// bob, a readOnly participant of the owner's share; the victim is alice, a readWrite one.
    @Suite("Mirroring: zones and records known by owner", .timeLimit(.minutes(5)))
    struct ZoneIdentityTests {
        struct Setup {
            let cloud: Cloud
            let owner: Device
            let victim: Device
            let zoneName: String

            func stop() async { await ConflictTests.stop(cloud, owner, victim) }
        }

        /// The owner shares a session with two readings: alice readWrite (accepted on her
        /// device), bob readOnly.
        static func shared() async throws -> Setup {
            let cloud = try await Cloud.start()
            let owner = try await Device.start("O", user: "owner", cloud: cloud)
            let victim = try await Device.start("P", user: "alice", cloud: cloud)
            let session = try await owner.insertSession("mochi")
            try await owner.insertEvents(["bg-1", "bg-2"], session: session)
            try await owner.send()
            let created = try await owner.call("share.create", ["objectID": .string(session), "participants": [
                ["user": "alice", "permission": "readWrite"], ["user": "bob", "permission": "readOnly"]]])
            let zoneName = try #require(created["zoneName"]?.stringValue)
            _ = try await victim.call("share.accept", ["zoneName": .string(zoneName), "ownerName": "owner"])
            return Setup(cloud: cloud, owner: owner, victim: victim, zoneName: zoneName)
        }

        /// bob reads the owner's zone as a participant, copies its records with a forged note
        /// into a zone of his own named `forgedZone`, shares that zone with alice (readWrite),
        /// and alice's device accepts it.
        static func forge(_ setup: Setup, into forgedZone: String) async throws {
            let bob = try await setup.cloud.connect("bob-secret")
            defer { bob.close() }
            _ = try await bob.call("shares.accept", ["zoneID": ["zoneName": .string(setup.zoneName), "ownerName": "owner"]])
            let original = try await setup.cloud.records(user: "bob", database: "shared",
                                                         zone: ["zoneName": .string(setup.zoneName), "ownerName": "owner"])
            let copies = original.filter { $0["recordType"] != "cloudkit.share" }
            #expect(copies.count == 3, "bob reads the session and its two readings")
            let zone: JSONValue = ["zoneName": .string(forgedZone)]
            _ = try await bob.call("zones.save", ["database": "private", "zoneIDs": [zone]])
            var saves: [JSONValue] = copies.map { record in
                var fields = record["fields"]?.objectValue ?? [:]
                if record["recordType"] == "CD_CareEvent" { fields["CD_note"] = ["value": "forged by bob", "type": "string"] }
                if record["recordType"] == "CD_CareSession" { fields["CD_title"] = ["value": "bob's cat", "type": "string"] }
                return ["recordName": record["recordName"] ?? .null, "recordType": record["recordType"] ?? .null, "zoneID": zone,
                        "fields": .object(fields)]
            }
            saves.append(["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "zoneID": zone, "fields": [:]])
            _ = try await bob.call("records.modify", ["database": "private", "saves": .array(saves)])
            _ = try await bob.call("participants.add", ["zoneID": zone, "user": "alice", "permission": "readWrite"])
            _ = try await setup.victim.call("share.accept", ["zoneName": .string(forgedZone), "ownerName": "bob"])
        }

        /// What alice's device must show after bob's forgery, whatever his zone is called: the
        /// owner's values, every object in the owner's zone, bob's records refused as records
        /// of another zone, and her next edit in the owner's zone only.
        static func expectUnfooled(_ setup: Setup, forgedZone: String) async throws {
            let victim = setup.victim
            let events = try await victim.objects("CareEvent", store: "Shared")
            #expect(events.count == 2)
            #expect(events.allSatisfy { $0["values"]?["note"] != "forged by bob" })
            #expect(events.allSatisfy { $0["zone"] == .string(setup.zoneName) && $0["zoneOwner"] == "owner" })
            let sessions = try await victim.objects("CareSession", store: "Shared")
            #expect(sessions.map { $0["values"]?["title"] } == ["Mochi"])
            // Both zones' share metadata, each under its own owner.
            let shares = try #require(try await victim.call("share.list")["shares"]?.arrayValue)
            #expect(Set(shares.compactMap { $0["ownerName"]?.stringValue.map { "\($0)/" + ($0 == "owner" ? setup.zoneName : forgedZone) } })
                    == ["owner/\(setup.zoneName)", "bob/\(forgedZone)"])
            #expect(shares.contains { $0["ownerName"] == "owner" && $0["zoneName"] == .string(setup.zoneName) && $0["permission"] == "readWrite" })
            #expect(shares.contains { $0["ownerName"] == "bob" && $0["zoneName"] == .string(forgedZone) })
            // bob's three records are listed as refused, as records of his zone.
            let status = try await victim.status()
            let refused = status["stores"]?.arrayValue?.first { $0["store"] == "Shared" }?["unimportable"]?.arrayValue ?? []
            #expect(refused.count == 3)
            #expect(refused.allSatisfy { $0["zone"] == .string("bob/\(forgedZone)") && $0["code"] == "uniquenessConstraint" })

            // alice's edit goes to the owner's zone; bob's copy keeps his forgery.
            let reading = try await victim.objectID(id: "bg-1")
            try await victim.set(reading, ["note": "checked by alice"])
            let sent = try await victim.send()
            #expect(sent["saved"] == 1)
            #expect(try await setup.cloud.eventField("CD_note", of: "bg-1", zoneName: setup.zoneName) == "checked by alice")
            let forged = try await setup.cloud.records(user: "bob", zone: ["zoneName": .string(forgedZone)])
            #expect(forged.first { $0["fields"]?["CD_id"]?["value"] == "bg-1" }?["fields"]?["CD_note"]?["value"] == "forged by bob")
            // A later fetch changes none of it.
            try await victim.fetch()
            #expect(try await victim.object(id: "bg-1")?["values"]?["note"] == "checked by alice")
            #expect(try await victim.objects("CareEvent", store: "Shared").count == 2)
        }

        @Test("Another user's zone with the owner's zone name and record names is another zone: the device keeps the owner's data and edits there")
        func forgedZoneOfTheSameName() async throws {
            let setup = try await Self.shared()
            try await Self.forge(setup, into: setup.zoneName)
            try await Self.expectUnfooled(setup, forgedZone: setup.zoneName)
            await setup.stop()
        }

        @Test("Another user's records named like the owner's, in a zone of another name, are not taken for a move of the owner's objects")
        func forgedRecordsInAnotherZone() async throws {
            let setup = try await Self.shared()
            let forgedZone = "com.apple.coredata.cloudkit.share.FORGED"
            try await Self.forge(setup, into: forgedZone)
            try await Self.expectUnfooled(setup, forgedZone: forgedZone)
            await setup.stop()
        }

        @Test("A mirroring device refuses clients that write as its mirror (author sync) or set share metadata; a device without a mirror allows both")
        func onlyTheMirrorSpeaksForTheCloud() async throws {
            let cloud = try await Cloud.start()
            let device = try await Device.start("A", user: "alice", cloud: cloud)
            let asMirror = try await device.failure("context.open", ["author": "sync"])
            #expect(asMirror.code == "permissionFailure")
            #expect(asMirror.details["field"] == "params.author")
            let metadata = try await device.failure("share.setMetadata", ["zoneName": "com.apple.coredata.cloudkit.share.Z1", "ownerName": "owner",
                                                                          "permission": "readWrite"])
            #expect(metadata.code == "permissionFailure")
            #expect(try await device.call("share.list")["shares"]?.arrayValue?.isEmpty == true)
            #expect(try await device.call("context.open", ["author": "app"])["author"] == "app")
            _ = await device.stop()

            let standalone = try await MeowProcess.start("store-service", ["--socket", cloud.directory.file("alone.sock"), "--in-memory"])
            let client = try WireClient(socketPath: cloud.directory.file("alone.sock"))
            try await client.hello(client: "zone-identity-tests")
            #expect(try await client.call("context.open", ["author": "sync"])["author"] == "sync")
            _ = try await client.call("share.setMetadata", ["zoneName": "share-Z", "ownerName": "owner", "permission": "readOnly"])
            client.close()
            _ = await standalone.stop()
            await cloud.stop()
        }

        @Test("A store written when zones were known by name alone is migrated on open: each shared object's zone gains its owner")
        func oldLayoutIsMigrated() async throws {
            let directory = TemporaryDirectory(prefix: "zid")
            let data = directory.file("device")
            let socket = directory.file("d.sock")
            var service = try await MeowProcess.start("store-service", ["--socket", socket, "--data-dir", data])
            var client = try WireClient(socketPath: socket)
            try await client.hello(client: "zone-identity-tests")
            _ = try await client.call("share.setMetadata", ["zoneName": "share-Z", "ownerName": "olivia", "permission": "readWrite"])
            let importer = try #require(try await client.call("context.open", ["author": "sync"])["context"]?.stringValue)
            _ = try await client.call("object.insert", ["context": .string(importer), "entity": "CareSession", "store": "Shared", "uuid": "REC-1",
                                                        "zone": "share-Z", "zoneOwner": "olivia", "values": ["id": "mochi"]])
            _ = try await client.call("context.save", ["context": .string(importer)])
            client.close()
            #expect(await service.stop() == 0)

            // The earlier layout: the zone's name alone on the row, one share row per zone name.
            do {
            let database = try Database(path: "\(data)/MeowCare-Shared.sqlite")
            try database.execute("""
                UPDATE e_CareSession SET z_zone = 'share-Z';
                CREATE TABLE z_share_old(zone_name TEXT PRIMARY KEY, owner_name TEXT NOT NULL, permission TEXT NOT NULL, updated_at TEXT NOT NULL);
                INSERT INTO z_share_old SELECT zone_name, owner_name, permission, updated_at FROM z_share;
                DROP TABLE z_share; ALTER TABLE z_share_old RENAME TO z_share;
                DELETE FROM z_metadata WHERE key = 'zoneKeys';
                """)
            }

            service = try await MeowProcess.start("store-service", ["--socket", socket, "--data-dir", data])
            client = try WireClient(socketPath: socket)
            try await client.hello(client: "zone-identity-tests")
            let fetched = try await client.call("fetch", ["entity": "CareSession", "predicate": "zone == 'share-Z' AND zoneOwner == 'olivia'"])
            let session = try #require(fetched["objects"]?.arrayValue?.first)
            #expect(session["zone"] == "share-Z")
            #expect(session["zoneOwner"] == "olivia")
            let check = try await client.call("permission.check", ["objectIDs": [session["objectID"] ?? .null]])
            #expect(check["objects"]?.arrayValue?.first?["canUpdateRecord"] == true)
            // The share table is keyed by (zone, owner): another owner's zone of that name is another row.
            _ = try await client.call("share.setMetadata", ["zoneName": "share-Z", "ownerName": "bob", "permission": "readOnly"])
            let shares = try #require(try await client.call("share.list", [:])["shares"]?.arrayValue)
            #expect(Set(shares.compactMap { $0["ownerName"]?.stringValue }) == ["olivia", "bob"])
            #expect(try await client.call("permission.check", ["objectIDs": [session["objectID"] ?? .null]])["objects"]?.arrayValue?.first?["canUpdateRecord"] == true)
            client.close()
            #expect(await service.stop() == 0)
        }
    }
}
