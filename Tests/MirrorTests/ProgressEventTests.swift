import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

extension Mirroring {
    /// Long requests report `progress` events to the connection that made them, and meowctl
    /// shows them with --progress.
    @Suite("Progress of long requests", .timeLimit(.minutes(3)))
    struct ProgressEventTests {
        /// The progress events on `client` up to the one that ends `phase` (sent before the reply).
        static func progress(on client: WireClient, until phase: String) async -> [JSONValue] {
            var seen: [JSONValue] = []
            for await event in client.events where event.name == "progress" {
                seen.append(event.data)
                if event.data["phase"]?.stringValue == phase, event.data["done"] == event.data["total"] { break }
            }
            return seen
        }

        @Test("share.create over more records than one request holds reports its moves, from 0 to every record, to the connection that asked")
        func shareCreateReportsMoves() async throws {
            let cloud = try await Cloud.start()
            let owner = try await Device.start("O", user: "owner", cloud: cloud)
            let session = try await owner.insertSession("big")
            try await owner.insertEvents((0..<450).map { "e\($0)" }, session: session)
            try await owner.send()
            _ = try await cloud.admin("admin.setLimits", ["maxItemsPerRequest": 200])
            let asking = try WireClient(socketPath: owner.socket)
            try await asking.hello(client: "progress-test")
            _ = try await asking.call("subscribe", ["topics": ["progress"]])
            let created = try await asking.call("share.create", ["objectID": .string(session)])
            #expect(created["movedRecords"] == 451)
            let events = await Self.progress(on: asking, until: "moving")
            #expect(events.first?["done"] == 0 && events.first?["total"] == 451)
            #expect(events.last?["done"] == 451)
            #expect(events.allSatisfy { $0["op"] == "share.create" && $0["phase"] == "moving" })
            // In between, the moves as the send's batches landed: never backwards.
            let done = events.compactMap { $0["done"]?.intValue }
            #expect(done == done.sorted() && done.count >= 3)
            asking.close()
            _ = await owner.stop()
            await cloud.stop()
        }

        @Test("meowctl --progress shows share create, device and cloud snapshots and sync schema as they run")
        func meowctlShowsProgress() async throws {
            let cloud = try await Cloud.start()
            let owner = try await Device.start("O", user: "owner", cloud: cloud)
            let session = try await owner.insertSession("small")
            try await owner.insertEvents(["a", "b"], session: session)
            try await owner.send()
            let meowctl = try ExecutableLocator.locate().path("meowctl")
            let shared = try await MeowProcess.run(meowctl, ["share", "create", "--socket", owner.socket, "--session", "small", "--progress"])
            #expect(shared.status == 0, "\(shared.stderr)")
            #expect(shared.stderr.contains("share.create: moving 0/3\n") && shared.stderr.contains("share.create: moving 3/3"), "\(shared.stderr)")

            let file = cloud.directory.file("device.json")
            let device = try await MeowProcess.run(meowctl, ["snapshot", "export", "--socket", owner.socket, "--file", file, "--progress"])
            #expect(device.status == 0, "\(device.stderr)")
            #expect(device.stderr.contains("snapshot.export: reading 0/") && device.stderr.contains("snapshot.export: writing"), "\(device.stderr)")
            let back = try await MeowProcess.run(meowctl, ["snapshot", "import", "--socket", owner.socket, "--file", file, "--progress"])
            #expect(back.status == 0 && back.stderr.contains("snapshot.import: writing 0/"), "\(back.stderr)")

            let cloudFile = cloud.directory.file("cloud.json")
            let exported = try await MeowProcess.run(meowctl, ["snapshot", "export", "--socket", cloud.socket, "--credential", Cloud.adminCredential,
                                                       "--file", cloudFile, "--progress"])
            #expect(exported.status == 0 && exported.stderr.contains("admin.exportSnapshot: reading 0/") && exported.stderr.contains("admin.exportSnapshot: writing"), "\(exported.stderr)")
            let imported = try await MeowProcess.run(meowctl, ["snapshot", "import", "--socket", cloud.socket, "--credential", Cloud.adminCredential,
                                                       "--file", cloudFile, "--progress"])
            #expect(imported.status == 0 && imported.stderr.contains("admin.importSnapshot: writing 0/"), "\(imported.stderr)")

            let schema = try await MeowProcess.run(meowctl, ["sync", "schema", "--socket", owner.socket, "--progress"])
            #expect(schema.status == 0 && schema.stderr.contains("sync.initializeSchema: deleting 2/2"), "\(schema.stderr)")
            // --json never shows progress.
            let quiet = try await MeowProcess.run(meowctl, ["snapshot", "export", "--socket", owner.socket, "--file", file, "--progress", "--json"])
            #expect(quiet.status == 0 && !quiet.stderr.contains("snapshot.export:"), "\(quiet.stderr)")
            _ = await owner.stop()
            await cloud.stop()
        }
    }
}
