import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import Testing
import TestSupport
@testable import CloudMirrorKit
@testable import StoreServiceKit

extension Mirroring {
    /// The mirror's own tables change only inside a write, and what it reads back from them is
    /// what it wrote or an error naming the row, never a guess.
    @Suite("Mirroring: the bookkeeping's integrity", .timeLimit(.minutes(3)))
    struct BookkeepingIntegrityTests {
        @Test("A queue entry whose kind was damaged fails the send with internalError naming the row; nothing is sent and the entry stays")
        func aDamagedQueueKindIsAnErrorNamingTheRow() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("o-data")
            var device = try await Device.start("O", user: "owner", cloud: cloud, dataDirectory: data)
            _ = try await device.insertEvents(["damaged-kind"])
            #expect(try await device.pending() == 1)
            #expect(await device.stop() == 0)
            let files = try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.hasSuffix("-Private.sqlite") }
            let database = try Database(path: "\(data)/\(try #require(files.first))")
            try database.execute("UPDATE mirror_pending SET kind = 'upsert'")
            let seq = try #require(try database.scalar("SELECT seq FROM mirror_pending")?.int)
            device = try await Device.start("O", user: "owner", cloud: cloud, dataDirectory: data)
            let error = try await device.failure("sync.send")
            #expect(error.code == .internalError, "\(error)")
            #expect(error.message.contains("mirror_pending row \(seq)") && error.message.contains("'upsert'"), "\(error.message)")
            // Nothing went out in the entry's place (the send made not even the zone: reading it is zoneNotFound).
            let sent = try? await cloud.records(user: "owner")
            #expect(sent?.isEmpty ?? true, "nothing was sent in place of the damaged entry")
            await ConflictTests.stop(cloud, device)
            #expect(try database.query("SELECT kind FROM mirror_pending").map { $0[0].string } == ["upsert"],
                    "the entry is left as it was")
        }

        @Test("A change to the bookkeeping outside a write is refused and changes nothing")
        func aChangeOutsideAWriteIsRefused() throws {
            let store = try MergeRuleTests.privateStore("memory://outside-write")
            let state = StoreBookkeeping(store)
            try store.database.transaction { try state.createTables() }
            let error = #expect(throws: ServiceError.self) { try state.setValue(MirrorBookkeeping.databaseTokenKey, "t1") }
            #expect(error?.wire.code == .internalError)
            #expect(try state.value(MirrorBookkeeping.databaseTokenKey) == nil)
            try store.database.transaction { try state.setValue(MirrorBookkeeping.databaseTokenKey, "t1") }
            #expect(try state.value(MirrorBookkeeping.databaseTokenKey) == "t1")
        }
    }
}
