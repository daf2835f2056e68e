import CloudWire
import Foundation
import MeowWire
import SQLiteKit
@testable import SyncServiceKit
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Development and production: two sets of databases in one cloud, chosen by hello.
@Suite(.timeLimit(.minutes(3))) struct EnvironmentTests {
    let dir = TemporaryDirectory(prefix: "en")
    static let zone: JSONValue = ["zoneName": "Zone"]

    func start(dataDir: Bool = false) async throws -> MeowProcess {
        try await CloudProcess(dir: dir).start(dataDir: dataDir)
    }

    func connect(_ credential: String?, environment: String? = nil) async throws -> WireClient {
        let client = try WireClient(socketPath: dir.file("s.sock"))
        try await client.hello(client: "environment-tests", credential: credential, environment: environment)
        return client
    }

    func failure(_ body: () async throws -> Void) async -> WireError? { await CloudProcess.failure(body) }

    static func event(_ name: String, title: String = "note") -> JSONValue {
        ["recordName": .string(name), "zoneID": zone, "recordType": "CD_CareEvent",
         "fields": ["CD_title": ["type": "string", "value": .string(title)]]]
    }

    static func zoneNames(_ reply: JSONValue) -> [String] {
        (reply["zones"]?.arrayValue ?? []).compactMap { $0["zoneID"]?["zoneName"]?.stringValue }
    }

    @Test("Each environment has its own zones, records, change logs and pushes; hello chooses, development by default")
    func environmentsAreSeparateDatabases() async throws {
        let service = try await start()
        let development = try WireClient(socketPath: dir.file("s.sock"))
        let hello = try await development.hello(client: "t", credential: "owner-secret")
        #expect(hello.environment == "development")
        let production = try await connect("owner-secret", environment: "production")
        let productionListener = try await connect("owner-secret", environment: "production")
        _ = try await productionListener.call("subscribe", ["topics": ["databaseChanges"]] as JSONValue)

        _ = try await development.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "DevelopmentOnly"], Self.zone]] as JSONValue)
        _ = try await development.call("records.modify", ["database": "private", "saves": [Self.event("a")]] as JSONValue)
        // Production has only the default zone: the development zone and its record are not there.
        #expect(Self.zoneNames(try await production.call("zones.fetch", ["database": "private"] as JSONValue)) == ["_defaultZone"])
        let missing = await failure {
            _ = try await production.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "a", "zoneID": Self.zone]]] as JSONValue)
        }
        #expect(missing?.details["partialErrors"]?["a"]?["code"] == "zoneNotFound")
        let nothing = try await production.call("changes.fetchDatabase", ["database": "private"] as JSONValue)
        #expect(nothing["changedZones"]?.arrayValue?.isEmpty == true)

        // The same zone name in production is another zone, with a record of its own (once the
        // record type is deployed: production defines nothing itself).
        let admin = try await connect(CloudProcess.admin)
        _ = try await admin.call("admin.deploySchema", Empty())
        _ = try await production.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
        _ = try await production.call("records.modify", ["database": "private", "saves": [Self.event("a", title: "production")]] as JSONValue)
        let inProduction = try await production.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "a", "zoneID": Self.zone]]] as JSONValue)
        #expect(inProduction["records"]?.arrayValue?.first?["fields"]?["CD_title"]?["value"] == "production")
        let inDevelopment = try await development.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "a", "zoneID": Self.zone]]] as JSONValue)
        #expect(inDevelopment["records"]?.arrayValue?.first?["fields"]?["CD_title"]?["value"] == "note")

        // A development token means nothing in production's zone (another zone, another id).
        let developmentToken = try await development.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone] as JSONValue)["token"] ?? .null
        let crossed = await failure {
            _ = try await production.call("changes.fetchZone", ["database": "private", "zoneID": Self.zone, "since": developmentToken] as JSONValue)
        }
        #expect(crossed?.code == .changeTokenExpired)

        // The production listener heard only production's changes: its first push is for
        // production's Zone, not development's DevelopmentOnly saved before it.
        var events = productionListener.events.makeAsyncIterator()
        let first = await events.next()
        #expect(first?.name == "databaseChanged")
        #expect(first?.data["zoneID"]?["zoneName"] == "Zone")
        for client in [development, production, productionListener, admin] { client.close() }
        #expect(await service.stop() == 0)
    }

    @Test("An unknown environment in hello is invalidField naming the two; hello is not done and a good one then works")
    func anUnknownEnvironmentIsRefusedAtHello() async throws {
        let service = try await start()
        let client = try WireClient(socketPath: dir.file("s.sock"))
        let refused = await failure { try await client.hello(client: "t", credential: "owner-secret", environment: "staging") }
        #expect(refused?.code == .invalidField)
        #expect(refused?.details["field"] == "params.environment")
        #expect(refused?.message.contains("development and production") == true)
        #expect(await failure { _ = try await client.call("zones.fetch", ["database": "private"] as JSONValue) }?.code == .helloRequired)
        let hello = try await client.hello(client: "t", credential: "owner-secret", environment: "production")
        #expect(hello.environment == "production")
        #expect(hello.user == "owner")
        client.close()
        #expect(await service.stop() == 0)
    }

    @Test("Admin ops of one environment: a reset of production leaves development; an unknown environment changes nothing")
    func adminOpsNameTheirEnvironment() async throws {
        let service = try await start()
        let development = try await connect("owner-secret")
        let production = try await connect("owner-secret", environment: "production")
        let admin = try await connect(CloudProcess.admin)
        for client in [development, production] {
            _ = try await client.call("zones.save", ["database": "private", "zoneIDs": [Self.zone]] as JSONValue)
            _ = try await client.call("records.modify", ["database": "private", "saves": [Self.event("a")]] as JSONValue)
            if client === development { _ = try await admin.call("admin.deploySchema", Empty()) }
        }
        let bad = await failure { _ = try await admin.call("admin.reset", ["scope": "all", "environment": "prod"] as JSONValue) }
        #expect(bad?.code == .invalidField)
        #expect(Self.zoneNames(try await production.call("zones.fetch", ["database": "private"] as JSONValue)) == ["Zone", "_defaultZone"])

        let reset = try await admin.call("admin.reset", ["scope": "all", "environment": "production"] as JSONValue)
        #expect(reset["zonesRemoved"] == 4)  // Zone and the three users' default zones (made again, empty)
        #expect(Self.zoneNames(try await production.call("zones.fetch", ["database": "private"] as JSONValue)) == ["_defaultZone"])
        #expect(Self.zoneNames(try await development.call("zones.fetch", ["database": "private"] as JSONValue)) == ["Zone", "_defaultZone"])
        // An admin connection that chose production works there by default: a production reset
        // keeps production's schema.
        let productionAdmin = try WireClient(socketPath: dir.file("s.sock"))
        try await productionAdmin.hello(client: "t", credential: CloudProcess.admin, environment: "production")
        #expect(try await productionAdmin.call("admin.schema", Empty())["recordTypes"]?["CD_CareEvent"]?["CD_title"] == "STRING")
        _ = try await productionAdmin.call("admin.reset", ["scope": "all"] as JSONValue)
        #expect(try await productionAdmin.call("admin.schema", Empty())["recordTypes"]?["CD_CareEvent"]?["CD_title"] == "STRING")
        for client in [development, production, admin, productionAdmin] { client.close() }
        #expect(await service.stop() == 0)
    }

    @Test("A snapshot carries both environments: imported into another cloud, each environment's records are where they were")
    func snapshotsCarryBothEnvironments() async throws {
        let source = try CloudFixture()
        let production = source.engine.inEnvironment(.production)
        try source.makeZone()
        try source.save([record("a", title: "development")])
        _ = try source.engine.deploySchema()
        _ = try production.saveZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: "Zone")]))
        _ = try production.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [record("a", title: "production")]))
        let snapshot = try source.engine.exportSnapshot(includeCredentials: true).snapshot

        let target = try CloudEngine(database: Database.inMemory())
        let imported = try target.importSnapshot(snapshot)
        #expect(imported.zones == 2 * CloudFixture.users.count + 2)
        let fetch = FetchRecordsParams(database: .private, recordIDs: [RecordID(recordName: "a", zoneID: ZoneID(zoneName: "Zone"))])
        #expect(try target.fetchRecords(caller: "owner", fetch).records.first?.fields["CD_title"]?["value"] == "development")
        #expect(try target.inEnvironment(.production).fetchRecords(caller: "owner", fetch).records.first?.fields["CD_title"]?["value"] == "production")
    }

    @Test("A snapshot written before environments imports into development, and every user gets production's default zone")
    func aSnapshotFromBeforeEnvironmentsImportsIntoDevelopment() throws {
        let source = try CloudFixture()
        try source.makeZone()
        try source.save([record("a")])
        var snapshot = try source.engine.exportSnapshot(includeCredentials: true).snapshot
        // Rows as they were written before: no environment column, no production rows.
        for table in ["zones", "database_changes", "field_types"] {
            snapshot.tables[table] = snapshot.tables[table]?.filter { $0.last == "development" }.map { Array($0.dropLast()) }
        }
        let target = try CloudEngine(database: Database.inMemory())
        _ = try target.importSnapshot(snapshot)
        let fetch = FetchRecordsParams(database: .private, recordIDs: [RecordID(recordName: "a", zoneID: ZoneID(zoneName: "Zone"))])
        #expect(try target.fetchRecords(caller: "owner", fetch).records.count == 1)
        let productionZones = try target.inEnvironment(.production).fetchZones(caller: "owner", ZonesParams(database: .private))
        #expect(productionZones.zones.map(\.zoneID.zoneName) == ["_defaultZone"])
    }

    @Test("A cloud file written before environments opens with its zones, tokens and schema in development")
    func aCloudFileFromBeforeEnvironmentsMovesIntoDevelopment() throws {
        let path = dir.file("cloud.sqlite")
        let token: ChangeToken
        do {
            let first = try CloudFixture(path: path)
            try first.makeZone()
            try first.save([record("a")])
            token = try first.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: "Zone"))).token
        }
        do {
            // The three tables as they were before environments, rows and all (development's only).
            let db = try Database(path: path)
            try db.execute("""
                BEGIN;
                DROP INDEX database_changes_by_seq; DROP INDEX zone_removals_by_age;
                ALTER TABLE zones RENAME TO z; ALTER TABLE database_changes RENAME TO d; ALTER TABLE field_types RENAME TO f;
                CREATE TABLE zones(id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, name TEXT NOT NULL,
                    created REAL NOT NULL, horizon INTEGER NOT NULL DEFAULT 0, UNIQUE(owner, name));
                CREATE TABLE database_changes(user TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, zone_name TEXT NOT NULL,
                    kind TEXT NOT NULL, seq INTEGER NOT NULL, changed REAL NOT NULL, PRIMARY KEY(user, scope, owner, zone_name));
                CREATE INDEX database_changes_by_seq ON database_changes(user, scope, seq);
                CREATE TABLE field_types(record_type TEXT NOT NULL, field TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY(record_type, field));
                INSERT INTO zones SELECT id, owner, name, created, horizon FROM z WHERE environment = 'development';
                INSERT INTO database_changes SELECT user, scope, owner, zone_name, kind, seq, changed FROM d WHERE environment = 'development';
                INSERT INTO field_types SELECT record_type, field, type FROM f WHERE environment = 'development';
                DROP TABLE z; DROP TABLE d; DROP TABLE f;
                UPDATE sqlite_sequence SET seq = seq + 50 WHERE name = 'zones';
                COMMIT;
                """)
        }
        let counter = try Database(path: path).scalar("SELECT seq FROM sqlite_sequence WHERE name = 'zones'")?.int64 ?? 0
        let reopened = try CloudFixture(path: path)
        let zone = ZoneID(zoneName: "Zone")
        let changes = try reopened.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone, since: token))
        #expect(changes.changed.isEmpty)
        #expect(reopened.engine.fieldSchema.withLock { $0 }.json["CD_CareEvent"]?["CD_title"] == "STRING")
        let production = reopened.engine.inEnvironment(.production)
        #expect(try production.fetchZones(caller: "owner", ZonesParams(database: .private)).zones.map(\.zoneID.zoneName) == ["_defaultZone"])
        // Zone ids keep counting from where the old table's counter was: none is reused.
        _ = try production.saveZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [zone]))
        let check = try Database(path: path)
        #expect(try check.scalar("SELECT max(id) FROM zones")?.int64 ?? 0 > counter)
        #expect(try check.scalar("SELECT count(*) FROM pragma_table_info('field_types') WHERE name = 'environment'")?.int == 1)
    }
}
