import Foundation
import MeowWire
import SQLiteKit
@testable import StoreServiceKit
import Testing
import TestSupport

/// Lightweight migration's rules on a store file, opened by each model version in turn.
@Suite("Store migration between model versions")
struct StoreMigrationTests {
    static func model(_ photo: String) throws -> ManagedObjectModel {
        try ManagedObjectModel.load(json: Data("""
            {"name": "Album", "entities": [\(photo)],
             "configurations": [{"name": "Private", "scope": "private", "entities": ["\(photo.contains("Picture") ? "Picture" : "Photo")"]},
                                {"name": "Shared", "scope": "shared", "entities": []}]}
            """.utf8))
    }

    static func open(_ model: ManagedObjectModel, at path: String) throws {
        let coordinator = PersistentStoreCoordinator(model: model)
        try coordinator.addStore(configuration: "Private", url: "file://\(path)", filePath: path)
    }

    @Test("Entity and attribute renames by renaming identifier carry the rows over")
    func renamesCarryRows() throws {
        let directory = TemporaryDirectory(prefix: "mg")
        let path = directory.file("Album-Private.sqlite")
        try Self.open(try Self.model(#"{"name": "Photo", "attributes": [{"name": "id", "type": "string"}]}"#), at: path)
        do {
            let database = try Database(path: path)
            try database.execute("INSERT INTO e_Photo(z_pk, z_version, z_uuid, a_id) VALUES (1, 1, 'U1', 'p1')")
        }
        try Self.open(try Self.model(#"{"name": "Picture", "renamingIdentifier": "Photo", "attributes": [{"name": "code", "type": "string", "renamingIdentifier": "id"}]}"#), at: path)
        let database = try Database(path: path)
        #expect(try database.scalar("SELECT a_code FROM e_Picture WHERE z_uuid = 'U1'")?.string == "p1")
        #expect(try database.scalar("SELECT entity FROM z_primarykey WHERE entity = 'Picture'")?.string == "Picture")
    }

    @Test("A store written before stores kept their schema is judged by its columns' SQL types")
    func legacyStoreIsJudgedByColumnTypes() throws {
        let directory = TemporaryDirectory(prefix: "mg")
        let path = directory.file("Album-Private.sqlite")
        try Self.open(try Self.model(#"{"name": "Photo", "attributes": [{"name": "id", "type": "string"}]}"#), at: path)
        try Database(path: path).execute("DELETE FROM z_metadata WHERE key = 'schema'")
        #expect(throws: (any Error).self) {
            try Self.open(try Self.model(#"{"name": "Photo", "attributes": [{"name": "id", "type": "integer"}]}"#), at: path)
        }
        try Self.open(try Self.model(#"{"name": "Photo", "attributes": [{"name": "id", "type": "string"}, {"name": "n", "type": "integer"}]}"#), at: path)
        #expect(try Database(path: path).scalar("SELECT value FROM z_metadata WHERE key = 'schema'")?.string?.contains("\"n\":\"integer\"") == true)
    }

    @Test("An attribute removed and later added again with another type starts empty, in a column of its new type")
    func reAddedAttributeStartsEmpty() throws {
        let directory = TemporaryDirectory(prefix: "mg")
        let path = directory.file("Album-Private.sqlite")
        try Self.open(try Self.model(#"{"name": "Photo", "attributes": [{"name": "id", "type": "string"}, {"name": "n", "type": "string"}]}"#), at: path)
        try Database(path: path).execute("INSERT INTO e_Photo(z_pk, z_version, z_uuid, a_id, a_n) VALUES (1, 1, 'U1', 'p1', 'seven')")
        try Self.open(try Self.model(#"{"name": "Photo", "attributes": [{"name": "id", "type": "string"}]}"#), at: path)
        try Self.open(try Self.model(#"{"name": "Photo", "attributes": [{"name": "id", "type": "string"}, {"name": "n", "type": "integer", "defaultValue": 3}]}"#), at: path)
        let database = try Database(path: path)
        #expect(try database.scalar("SELECT a_n FROM e_Photo WHERE z_uuid = 'U1'")?.int64 == 3)
        #expect(try database.scalar("SELECT type FROM pragma_table_info('e_Photo') WHERE name = 'a_n'")?.string == "INTEGER")
    }

    @Test("The migration reports entities and properties renamed, added and removed, and the rows each entity kept")
    func migrationReport() throws {
        let directory = TemporaryDirectory(prefix: "mg")
        let path = directory.file("Album-Private.sqlite")
        let first = try ManagedObjectModel.load(json: Data("""
            {"name": "Album", "entities": [{"name": "Photo", "attributes": [{"name": "id", "type": "string"}, {"name": "blurb", "type": "string"}]},
                                           {"name": "Draft", "attributes": [{"name": "text", "type": "string"}]}],
             "configurations": [{"name": "Private", "scope": "private", "entities": ["Photo", "Draft"]}, {"name": "Shared", "scope": "shared", "entities": []}]}
            """.utf8))
        try Self.open(first, at: path)
        try Database(path: path).execute("INSERT INTO e_Photo(z_pk, z_version, z_uuid, a_id) VALUES (1, 1, 'U1', 'p1'), (2, 1, 'U2', 'p2')")
        let coordinator = PersistentStoreCoordinator(model: try Self.model(#"{"name": "Picture", "renamingIdentifier": "Photo", "attributes": [{"name": "code", "type": "string", "renamingIdentifier": "id"}, {"name": "likes", "type": "integer", "defaultValue": 0}]}"#))
        try coordinator.addStore(configuration: "Private", url: "file://\(path)", filePath: path)
        let report = try #require(coordinator.migrations.first)
        #expect(report.entitiesRenamed == ["Photo → Picture"])
        #expect(report.entitiesRemoved == ["Draft"])
        #expect(report.propertiesRenamed == ["Picture.id → Picture.code"])
        #expect(report.propertiesAdded == ["Picture.likes"])
        #expect(report.propertiesRemoved == ["Picture.blurb"])
        #expect(report.rowsKept == ["Picture": 2])
        #expect(report.summary == "Private store: entities renamed Photo → Picture; entities removed Draft; properties added Picture.likes; "
                + "properties renamed Picture.id → Picture.code; properties removed Picture.blurb; rows kept: Picture 2")
        // Opened again by the same version: nothing changed, nothing to report.
        let again = PersistentStoreCoordinator(model: coordinator.model)
        try again.addStore(configuration: "Private", url: "file://\(path)", filePath: path)
        #expect(again.migrations.isEmpty)
    }
}
