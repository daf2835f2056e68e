import Foundation
import MeowWire
import SQLiteKit
import Testing
import TestSupport

extension Mirroring {
    /// A device whose stores are new makes the mirror's tables at the mirror's first turn, not at
    /// start: what it saved before is still sent, a snapshot still carries the tables, and a
    /// device started again on its files makes them at start as before.
    @Suite("Mirroring: the tables of a new device", .timeLimit(.minutes(3)))
    struct MirrorTablesTests {
        static func mirrorTables(_ data: String) throws -> [String] {
            let files = try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.hasSuffix("-Private.sqlite") }
            let database = try Database(path: "\(data)/\(try #require(files.first))", readOnly: true)
            return try database.query(#"SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'mirror\_%' ESCAPE '\' ORDER BY name"#)
                .compactMap { $0[0].string }
        }

        @Test("Saves before the first sync step are sent by it; the tables exist from that step on, and at start once the files exist")
        func savesBeforeTheFirstStepAreSent() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("n-data")
            var device = try await Device.start("N", user: "owner", cloud: cloud, dataDirectory: data)
            _ = try await device.insertEvents(["before-1", "before-2"])
            #expect(try Self.mirrorTables(data) == [], "no mirror turn yet: no tables")
            #expect(try await device.send()["saved"] == 2)
            #expect(try await cloud.records(user: "owner").count == 2)
            let made = try Self.mirrorTables(data)
            #expect(made.contains("mirror_kv") && made.contains("mirror_pending") && made.contains("mirror_pending_links"))

            // Restarted on its files before any mirror turn: the stores are not new, the tables are made at start.
            #expect(await device.stop() == 0)
            let second = cloud.directory.file("m-data")
            device = try await Device.start("M1", user: "owner", cloud: cloud, dataDirectory: second)
            #expect(await device.stop() == 0)
            #expect(try Self.mirrorTables(second) == [])
            device = try await Device.start("M2", user: "owner", cloud: cloud, dataDirectory: second)
            #expect(try Self.mirrorTables(second) == made)
            #expect(await device.stop() == 0)
            await cloud.stop()
        }

        @Test("A snapshot of a new device that never synced carries the mirror's tables, as one of a synced device does")
        func aSnapshotBeforeTheFirstStepCarriesTheTables() async throws {
            let cloud = try await Cloud.start()
            let fresh = try await Device.start("F", user: "owner", cloud: cloud)
            let synced = try await Device.start("S", user: "owner", cloud: cloud)
            try await synced.send()
            let freshTables = try await fresh.call("snapshot.export", ["path": .string(cloud.directory.file("f.json"))])["stores"]
            let syncedTables = try await synced.call("snapshot.export", ["path": .string(cloud.directory.file("s.json"))])["stores"]
            for store in ["Private", "Shared"] {
                let names = Set(freshTables?[store]?.objectValue?.keys.filter { $0.hasPrefix("mirror_") } ?? [])
                #expect(names.contains("mirror_kv") && names.contains("mirror_pending_links"), "\(store): \(names.sorted())")
                #expect(names == Set(syncedTables?[store]?.objectValue?.keys.filter { $0.hasPrefix("mirror_") } ?? []))
            }
            _ = await fresh.stop()
            _ = await synced.stop()
            await cloud.stop()
        }
    }
}
