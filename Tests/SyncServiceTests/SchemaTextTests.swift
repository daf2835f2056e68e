import CloudWire
import Foundation
import MeowWire
@testable import SyncServiceKit
import TestSupport
import Testing

/// The schema's life: exported as CloudKit's schema language, imported into development,
/// diffed, deployed, and development reset to production's.
@Suite(.timeLimit(.minutes(3))) struct SchemaTextTests {
    static let cktoolFile = """
    DEFINE SCHEMA

        CREATE ROLE Reviewer;

        RECORD TYPE CD_Visit (
            "___createTime" TIMESTAMP SORTABLE,
            "___recordID"   REFERENCE QUERYABLE,
            "CD_clinic"     STRING QUERYABLE SEARCHABLE SORTABLE,
            CD_cost         NUMBER PREFERRED AS DOUBLE,
            "CD_tags"       LIST<STRING>,
            "CD_secret"     ENCRYPTED BYTES,   -- ENCRYPTED is read and ignored
            GRANT WRITE TO "_creator",
            GRANT CREATE, READ TO "_icloud",
            GRANT READ TO "_world"
        );
    """

    @Test("A cktool-style file imports into development (system fields, grants, roles and index options skipped); export writes it back as the language")
    func importThenExport() throws {
        let cloud = try CloudFixture()
        let result = try cloud.engine.importSchema(Self.cktoolFile)
        #expect(result.newRecordTypes == ["CD_Visit"])
        #expect(result.added.map(\.field) == ["CD_clinic", "CD_cost", "CD_secret", "CD_tags"])
        #expect(result.added.map(\.type) == ["STRING", "DOUBLE", "BYTES", "STRING_LIST"])
        let text = cloud.engine.exportSchema().text
        #expect(text.contains("RECORD TYPE \"CD_Visit\" (\n        \"CD_clinic\" STRING,\n        \"CD_cost\" DOUBLE,"))
        #expect(text.contains("\"CD_tags\" LIST<STRING>,"))
        // The export reads back as the same schema; importing it again adds nothing.
        #expect(try SchemaText.parse(text) == ["CD_Visit": ["CD_clinic": "string", "CD_cost": "double", "CD_secret": "bytes", "CD_tags": "list/string"]])
        let again = try cloud.engine.importSchema(text)
        #expect(again.added.isEmpty && again.unchanged == 4)
        // Production has none of it until a deploy.
        #expect(cloud.engine.inEnvironment(.production).exportSchema().text == "DEFINE SCHEMA\n")
        _ = try cloud.engine.deploySchema()
        #expect(cloud.engine.inEnvironment(.production).exportSchema().text == text)
    }

    @Test("Malformed schema text is invalidArguments naming its line and column, and changes nothing")
    func malformedText() throws {
        let cloud = try CloudFixture()
        let cases: [(String, Int, Int, String)] = [
            ("RECORD TYPE A (\"f\" STRING);", 1, 1, "expected DEFINE, found 'RECORD'"),
            ("DEFINE SCHEMA\n  RECORD TYPE A (\n    \"f\" STRNG\n  );", 3, 9, "expected a data type"),
            ("DEFINE SCHEMA\n  RECORD TYPE A (\"f\" STRING)", 2, 29, "expected ';', found the end of the text"),
            ("DEFINE SCHEMA\n  RECORD TYPE A (\"f STRING);", 2, 18, "a quoted name is not closed"),
            ("DEFINE SCHEMA RECORD TYPE A (\"f\" LIST<LIST<STRING>>);", 1, 39, "expected a data type"),
            ("DEFINE SCHEMA RECORD TYPE A (\"f\" STRING, \"f\" INT64);", 1, 42, "field 'f' of record type 'A' is defined twice"),
            ("DEFINE SCHEMA RECORD TYPE A (\"f\" STRING) ; # ", 1, 44, "unexpected character '#'"),
        ]
        for (text, line, column, message) in cases {
            let error = wireError { _ = try cloud.engine.importSchema(text) }
            #expect(error?.code == .invalidArguments)
            #expect(error?.details["line"] == .int(line) && error?.details["column"] == .int(column), "\(text): \(error?.message ?? "")")
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("Nothing was imported") == true)
        }
        #expect(cloud.engine.fieldSchema.withLock { $0 }.types.isEmpty)
    }

    @Test("An import giving a defined field another type is refused by name and changes nothing, not even its new fields")
    func retypingImportIsRefused() throws {
        let cloud = try CloudFixture()
        try cloud.makeZone()
        try cloud.save([record("e1")])
        let error = wireError {
            _ = try cloud.engine.importSchema("DEFINE SCHEMA RECORD TYPE CD_CareEvent (\"CD_title\" INT64, \"CD_mood\" STRING);")
        }
        #expect(error?.code == .invalidArguments)
        #expect(error?.message.contains("field 'CD_title' of record type 'CD_CareEvent' is INT64 in the text and STRING in development") == true)
        #expect(error?.details["conflicts"]?.arrayValue?.first?["field"] == "CD_title")
        #expect(cloud.engine.fieldSchema.withLock { $0 }.types["CD_CareEvent"] == ["CD_title": "string"])
    }

    @Test("Resetting development clears its data and returns its schema to production's; production keeps its records")
    func resetDevelopment() throws {
        let cloud = try CloudFixture()
        try cloud.makeZone()
        try cloud.save([record("e1")])
        _ = try cloud.engine.deploySchema()
        _ = try cloud.engine.importSchema("DEFINE SCHEMA RECORD TYPE CD_Note (\"CD_text\" STRING);")
        let production = cloud.engine.inEnvironment(.production)
        _ = try production.saveZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: "Zone")]))
        _ = try production.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [record("p1")]))

        let reset = try cloud.engine.inEnvironment(.production).resetDevelopment()
        #expect(reset.zonesRemoved >= 1)
        #expect(reset.recordTypes == ["CD_CareEvent": ["CD_title": "STRING"]])
        #expect(cloud.engine.exportSchema().text == production.exportSchema().text)
        let gone = wireError { _ = try cloud.engine.fetchRecords(caller: "owner", FetchRecordsParams(database: .private, recordIDs: [RecordID(recordName: "e1", zoneID: ZoneID(zoneName: "Zone"))])) }
        #expect(gone != nil)
        let kept = try production.fetchRecords(caller: "owner", FetchRecordsParams(database: .private, recordIDs: [RecordID(recordName: "p1", zoneID: ZoneID(zoneName: "Zone"))]))
        #expect(kept.records.map(\.recordName) == ["p1"])
    }
}
