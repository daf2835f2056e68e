import Foundation
import SQLiteKit
@testable import StoreServiceKit
import Testing
import TestSupport

/// In-memory stores of the same entities start from one image of the first one made in the
/// process (`Database.inMemory(madeBy:)`); what they hold must be what building the schema
/// gives: the same tables, indexes and rows, the same settings, and each store's own identity.
@Suite struct SchemaImageTests {
    /// What a store's database holds that its schema decides, and its own rows apart.
    struct Layout: Equatable {
        var master: [[SQLValue]]
        var primaryKeys: [[SQLValue]]
        var shared: [[SQLValue]]
        var journalMode: String?
        var pageSize: Int?
        var foreignKeys: Int?

        init(_ database: Database) throws {
            master = try database.query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").map(\.values)
            primaryKeys = try database.query("SELECT rowid, entity, max FROM z_primarykey ORDER BY rowid").map(\.values)
            shared = try database.query("SELECT rowid, key, value FROM z_metadata WHERE key IN ('schema', 'zoneKeys', 'model') ORDER BY rowid").map(\.values)
            journalMode = try database.scalar("PRAGMA journal_mode")?.string
            pageSize = try database.scalar("PRAGMA page_size")?.int
            foreignKeys = try database.scalar("PRAGMA foreign_keys")?.int
        }
    }

    static func store(_ configuration: StoreConfiguration, path: String? = nil, mirrorTables: Bool) throws -> PersistentStore {
        try PersistentStore(url: path.map { "file://\($0)" } ?? "memory:///\(UUID().uuidString)/\(configuration.name)", filePath: path,
                            configuration: configuration, model: .meowCare(), mirrorTables: mirrorTables)
    }

    @Test("a store made from the image holds what building its schema gives, with its own identity", arguments: [false, true])
    func imageIsTheBuiltSchema(mirrorTables: Bool) throws {
        let model = ManagedObjectModel.meowCare()
        let ordered = model.configurations[0].entities.compactMap { model.entity(named: $0) }.sorted { $0.name < $1.name }
        // Built here, without an image: the script run on a plain in-memory database.
        let built = try Database.inMemory()
        try built.execute("BEGIN IMMEDIATE;\n\(PersistentStore.newSchema(ordered, mirrorTables: mirrorTables));\nCOMMIT")
        let stores = try model.configurations.map { try Self.store($0, mirrorTables: mirrorTables) }
        let again = try Self.store(model.configurations[0], mirrorTables: mirrorTables)
        // The two configurations hold the same entities: one script, so at least two of these
        // three came from the image (the first may have made it).
        #expect(Set(model.configurations.map { Set($0.entities) }).count == 1)
        let expected = try Layout(built)
        #expect(expected.master.contains { $0[1] == .text("e_CareEvent") })
        #expect(expected.master.contains { $0[1] == .text("mirror_kv") } == mirrorTables)
        for store in stores + [again] {
            var layout = try Layout(store.database)
            #expect(layout.shared.last == [.integer(4), .text("model"), .text("MeowCare")])
            layout.shared.removeLast()
            #expect(layout == expected)
            #expect(try store.database.query("SELECT key, value FROM z_metadata WHERE rowid > 2 ORDER BY rowid").map(\.values) == [
                [.text("storeUUID"), .text(store.uuid)], [.text("model"), .text("MeowCare")], [.text("configuration"), .text(store.name)],
            ])
        }
        #expect(Set((stores + [again]).map(\.uuid)).count == 3)
        // Each is its own database: a row written in one is not in another.
        try stores[0].database.execute("INSERT INTO z_share(zone_name, owner_name, permission, updated_at) VALUES ('z', 'o', 'readWrite', 't')")
        #expect(try stores[1].database.scalar("SELECT count(*) FROM z_share")?.int == 0)
        #expect(try again.database.scalar("SELECT count(*) FROM z_share")?.int == 0)
    }

    @Test("a new store file is made by the same script: the same tables, indexes and rows as an in-memory store", arguments: [false, true])
    func fileIsTheSameSchema(mirrorTables: Bool) throws {
        let directory = TemporaryDirectory()
        let model = ManagedObjectModel.meowCare()
        let file = try Self.store(model.configurations[1], path: directory.file("s.sqlite"), mirrorTables: mirrorTables)
        let memory = try Self.store(model.configurations[1], mirrorTables: mirrorTables)
        var fileLayout = try Layout(file.database)
        var memoryLayout = try Layout(memory.database)
        #expect(fileLayout.journalMode == "wal")
        #expect(memoryLayout.journalMode == "memory")
        fileLayout.journalMode = nil
        memoryLayout.journalMode = nil
        #expect(fileLayout == memoryLayout)
    }
}
