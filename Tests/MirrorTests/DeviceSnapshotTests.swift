#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

extension Mirroring {
    /// A device's two stores to and from a file (`snapshot.export` / `snapshot.import`,
    /// `meowctl snapshot --socket DEVICE`): a state put back whole, or bad input refused whole.
    @Suite("Device snapshots", .timeLimit(.minutes(3)))
    struct DeviceSnapshotTests {
        static func storeUUIDs(_ device: Device) async throws -> [String] {
            try await device.call("store.list")["stores"]?.arrayValue?.compactMap { $0["storeUUID"]?.stringValue } ?? []
        }

        @Test("A device's stores go to a file and come back: objects, shares and sync state as they were, the store identities and token counter the device's own")
        func exportAndImportBothStores() async throws {
            let setup = try await SharingTests.shared("readWrite")
            let (cloud, owner, participant) = (setup.cloud, setup.o, setup.p)
            try await participant.insertEvents(["mine"], store: "Private")
            let file = cloud.directory.file("p.json")
            let identities = try await Self.storeUUIDs(participant)
            let written = try await participant.call("snapshot.export", ["path": .string(file)])
            #expect(written["stores"]?["Shared"]?["e_CareSession"] == 1)
            #expect(written["stores"]?["Private"]?["e_CareEvent"] == 1)
            var info = stat()
            #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600 && Int(info.st_size) == written["bytes"]?.intValue)
            let before = try await participant.ids()
            let tokenBefore = try await participant.call("store.list")["stores"]?.arrayValue?.first?["lastHistoryToken"]?.intValue ?? 0

            // Changes after the snapshot: a new private event, and the owner's new shared event fetched.
            try await participant.insertEvents(["later"], store: "Private")
            try await owner.insertEvents(["shared-later"], session: try await owner.objectID(id: "mochi", entity: "CareSession"))
            try await owner.send()
            try await participant.fetch()
            #expect(try await participant.ids().count == before.count + 2)

            let imported = try await MeowProcess.run("meowctl", ["snapshot", "import", "--socket", participant.socket, "--file", file])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(imported.stdout.contains("imported \(file)"))
            #expect(try await participant.ids().sorted() == before.sorted())
            #expect(try await Self.storeUUIDs(participant) == identities)
            #expect(try await participant.call("share.list")["shares"]?.arrayValue?.count == 1)
            // Tokens never go back: the next save's is above every token handed out before.
            let tokenAfter = try await participant.call("store.list")["stores"]?.arrayValue?.first?["lastHistoryToken"]?.intValue ?? 0
            #expect(tokenAfter >= tokenBefore)
            // The sync state came back too: a fetch brings the owner's later event again.
            try await participant.fetch()
            #expect(try await participant.ids().contains("shared-later"))
            // "mine" was saved but not sent when the snapshot was taken: it is queued again.
            #expect(try await participant.pending() == 1)
            #expect(try await participant.send()["saved"] == 1)

            // meowctl export to a relative path, from its working directory; the file seeds another device.
let meowctl = try ExecutableLocator.locate().path("meowctl")
            let exported = try await MeowProcess.run("/bin/sh", ["-c", "cd '\(cloud.directory.path)' && '\(meowctl)' snapshot export --socket '\(participant.socket)' --file copy.json"])
            #expect(exported.status == 0, "\(exported.stderr)")
            let seeded = try await Device.start("Q", user: "alice", cloud: cloud)
            let seededIdentities = try await Self.storeUUIDs(seeded)
            _ = try await seeded.call("snapshot.import", ["path": .string(cloud.directory.file("copy.json"))])
            #expect(try await seeded.ids().sorted() == participant.ids().sorted())
            #expect(try await Self.storeUUIDs(seeded) == seededIdentities)
            _ = await seeded.stop()
            _ = await participant.stop()
            _ = await owner.stop()
            await cloud.stop()
        }

        @Test("A snapshot grants no share permission: a mirroring device keeps the cloud's, and learns a zone only the snapshot names from the cloud again")
        func sharePermissionsComeFromTheCloud() async throws {
            let setup = try await SharingTests.shared("readOnly")
            let (cloud, participant) = (setup.cloud, setup.p)
            // The snapshot, edited to say readWrite.
            let exported = try #require(try await participant.call("snapshot.export")["snapshot"])
            let snapshot = SnapshotEditing.settingSharePermission(exported, to: "readWrite")
            #expect(JSONWriter.text(snapshot).contains("readWrite"))
            _ = try await participant.call("snapshot.import", ["snapshot": snapshot])
            #expect(try await participant.call("share.list")["shares"]?.arrayValue?.first?["permission"] == "readOnly")
            let session = try await setup.sharedSession(on: participant)
            let context = try await participant.context()
            _ = try await participant.call("object.insert", ["context": .string(context), "entity": "CareEvent",
                                                             "values": Device.eventValues("sneaky", session: session)])
            #expect(try await participant.failure("context.save", ["context": .string(context)]).code == .permissionFailure)

            // A new device of the participant's, seeded with it: no permission until the cloud gives it one.
            let seeded = try await Device.start("Q", user: "alice", cloud: cloud)
            _ = try await seeded.call("snapshot.import", ["snapshot": snapshot])
            #expect(try await seeded.call("share.list")["shares"] == [], "the snapshot's share rows are not taken")
            try await seeded.fetch()
            #expect(try await seeded.call("share.list")["shares"]?.arrayValue?.first?["permission"] == "readOnly")
            _ = await seeded.stop()
            await setup.stop()
        }

        @Test("Bad snapshots change nothing: a relative or unreadable path, a truncated file, a newer format, another model, a row of the wrong width, both or neither of snapshot and path")
        func badSnapshotsChangeNothing() async throws {
            let cloud = try await Cloud.start()
            let device = try await Device.start("A", user: "owner", cloud: cloud)
            try await device.insertEvents(["kept1", "kept2"])
            let file = cloud.directory.file("a.json")
            let snapshot = try #require(try await device.call("snapshot.export")["snapshot"])
            _ = try await device.call("snapshot.export", ["path": .string(file)])
            let whole = try Data(contentsOf: URL(fileURLWithPath: file))
            let truncated = cloud.directory.file("truncated.json")
            try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: truncated))
            try await device.insertEvents(["after"])
            let ids = try await device.ids().sorted()
            #expect(ids == ["after", "kept1", "kept2"])

            func edited(_ change: (inout [String: JSONValue]) -> Void) -> JSONValue {
                var object = snapshot.objectValue ?? [:]
                change(&object)
                return .object(object)
            }
            let cases: [(String, JSONValue, String)] = [
                ("relative path", ["path": "a.json"], "absolute"),
                ("missing file", ["path": .string(cloud.directory.file("none.json"))], "cannot read"),
                ("truncated file", ["path": .string(truncated)], "is not a device snapshot"),
                ("newer format", ["snapshot": edited { $0["schemaVersion"] = 2 }], "format version 2"),
                ("another model", ["snapshot": edited { $0["model"] = "Trips" }], "model 'Trips'"),
                ("a row of the wrong width", ["snapshot": edited { object in
                    var stores = object["stores"]?.arrayValue ?? []
                    var first = stores[0].objectValue ?? [:]
                    var tables = first["tables"]?.objectValue ?? [:]
                    var table = tables["z_metadata"]?.objectValue ?? [:]
                    table["rows"] = .array((table["rows"]?.arrayValue ?? []) + [["only-one-value"]])
                    tables["z_metadata"] = .object(table)
                    first["tables"] = .object(tables)
                    stores[0] = .object(first)
                    object["stores"] = .array(stores)
                }], "1 values for 2 columns"),
                ("both", ["snapshot": snapshot, "path": .string(file)], "exactly one"),
                ("neither", [:], "exactly one"),
            ]
            for (name, params, text) in cases {
                let error = try await device.failure("snapshot.import", params)
                #expect(error.code == .invalidField, "\(name)")
                #expect(error.message.contains(text), "\(name): \(error.message)")
                #expect(try await device.ids().sorted() == ids, "\(name)")
            }
            let unwritable = try await device.failure("snapshot.export", ["path": "/proc/a.json"])
            #expect(unwritable.code == .invalidField && unwritable.details["path"] == "/proc/a.json")
            _ = await device.stop()
            await cloud.stop()
        }
    }
}
