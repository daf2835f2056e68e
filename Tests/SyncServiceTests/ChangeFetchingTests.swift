import CloudWire
import MeowWire
import SQLiteKit
import TestSupport
import Testing
@testable import SyncServiceKit

/// docs/RULES.md, fetching changes and tokens: zone and database changes, tokens, paging, expiry; persistence and snapshots.
@Suite struct ChangeFetchingTests {
    let cloud: CloudFixture
    let zone = ZoneID(zoneName: "Zone")
    init() throws {
        cloud = try CloudFixture()
        try cloud.makeZone()
    }

    func changes(since token: ChangeToken? = nil, limit: Int? = nil, as user: String = "owner") throws -> FetchZoneChangesResult {
        try cloud.engine.fetchZoneChanges(caller: user, FetchZoneChangesParams(database: .private, zoneID: zone, since: token, limit: limit))
    }

    @Test func zoneChangesPageWithMoreComingAndResumeFromTheLastToken() throws {
        try cloud.save((0..<10).map { record("r\($0)") })
        var names: [String] = []
        var token: ChangeToken?
        var pages = 0
        while true {
            let page = try changes(since: token, limit: 3)
            names += page.changed.map(\.recordName)
            token = page.token
            pages += 1
            if !page.moreComing { break }
        }
        #expect(pages == 4)
        #expect(names == (0..<10).map { "r\($0)" })
        #expect(try changes(since: token).changed.isEmpty)
    }

    /// Database pages are bounded by bytes too: 6,000 zones with 255-character names are over
    /// the 8 MiB page budget as counted (six bytes a name byte), so they come in two pages.
    @Test func databaseChangePagesEndAtThePageBudget() throws {
        var limits = LimitsParams()
        limits.maxZonesPerUser = 7_000
        _ = try cloud.engine.setLimits(limits)
        let names = (0..<6_000).map { number in String(number) + String(repeating: "z", count: 255 - String(number).count) }
        for start in stride(from: 0, to: names.count, by: 1_000) {
            _ = try cloud.engine.saveZones(caller: "owner", ZonesParams(database: .private, zoneIDs: names[start..<(start + 1_000)].map { ZoneID(zoneName: $0) }))
        }
        let first = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private, limit: 10_000))
        #expect(first.moreComing)
        // About 8 MiB / (6 × (255 + 16) + 64) zones: the budget ended the page, not the limit.
        #expect((4_900..<5_000).contains(first.changedZones.count), "\(first.changedZones.count)")
        let second = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private, since: first.token, limit: 10_000))
        #expect(!second.moreComing)
        // "Zone" (made by the fixture) and the 6,000, each once.
        let all = (first.changedZones + second.changedZones).map(\.zoneName)
        #expect(Set(all) == Set(names + ["Zone"]))
        #expect(all.count == 6_001)
    }

    @Test func deletionsAreReportedWithNameAndTypeAndEditsOnce() throws {
        try cloud.save([record("a"), record("b")])
        let token = try changes().token
        let tag = try #require(try cloud.fetch("b")?.recordChangeTag)
        try cloud.delete(["a"])
        try cloud.save([record("b", title: "edited", tag: tag)])
        let next = try changes(since: token)
        #expect(next.deleted == [DeletedRecord(recordName: "a", recordType: "CD_CareEvent")])
        #expect(next.changed.map(\.recordName) == ["b"])
        #expect(title(next.changed.first) == "edited")
    }

    @Test func forcedExpiryAnswersChangeTokenExpiredAndARefetchFromNilRecovers() throws {
        try cloud.save([record("a")])
        let token = try changes().token
        _ = try cloud.engine.expireChangeTokens()
        let error = wireError { _ = try changes(since: token) }
        #expect(error?.code == .changeTokenExpired)
        #expect(error?.details["ckErrorCode"] == 21)
        let fresh = try changes()
        #expect(fresh.changed.map(\.recordName) == ["a"])
        try cloud.save([record("b")])
        #expect(try changes(since: fresh.token).changed.map(\.recordName) == ["b"])
    }

    @Test func tokensOlderThanTheRetentionExpireOnceTheirTombstonesAreDropped() throws {
        var limits = LimitsParams()
        limits.retentionSeconds = 60
        _ = try cloud.engine.setLimits(limits)
        cloud.engine.setClock(1_800_000_000)
        try cloud.save([record("a"), record("b")])
        let token = try changes().token
        try cloud.delete(["a"])
        let recent = try changes(since: token)
        #expect(recent.deleted.map(\.recordName) == ["a"])
        cloud.engine.setClock(1_800_000_000 + 120)
        #expect(wireError { _ = try changes(since: token) }?.code == .changeTokenExpired)
        #expect(try changes(since: recent.token).deleted.isEmpty)
    }

    @Test func aRecreatedZoneExpiresTokensOfTheOldOne() throws {
        try cloud.save([record("a")])
        let token = try changes().token
        _ = try cloud.engine.deleteZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [zone]))
        #expect(wireError { _ = try changes(since: token) }?.code == .zoneNotFound)
        try cloud.makeZone()
        #expect(wireError { _ = try changes(since: token) }?.code == .changeTokenExpired)
    }

    @Test func theDefaultZoneHasNoChangeFetching() throws {
        let error = wireError {
            _ = try cloud.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: ZoneID.defaultZoneName)))
        }
        #expect(error?.code == .invalidArguments)
    }

    @Test func databaseChangesReportChangedDeletedAndPurgedZones() throws {
        let start = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private))
        #expect(start.changedZones.map(\.zoneName) == ["Zone"])
        try cloud.makeZone("Second")
        try cloud.makeZone("Third")
        try cloud.save([record("a")])
        let middle = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private, since: start.token))
        #expect(Set(middle.changedZones.map(\.zoneName)) == ["Second", "Third", "Zone"])
        _ = try cloud.engine.deleteZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: "Second")]))
        _ = try cloud.engine.deleteZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: "Third")], purge: true))
        let end = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private, since: middle.token))
        #expect(end.deletedZones.map(\.zoneName) == ["Second"])
        #expect(end.purgedZones.map(\.zoneName) == ["Third"])
        #expect(end.changedZones.isEmpty)
        let paged = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private, since: start.token, limit: 1))
        #expect(paged.moreComing)
    }

    @Test func otherUsersChangesDoNotShowInMyDatabase() throws {
        let start = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .private))
        try cloud.save([record("a")])
        let next = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .private, since: start.token))
        #expect(next.changedZones.isEmpty)
        #expect(try cloud.engine.fetchZones(caller: "alice", ZonesParams(database: .private)).zones.map(\.zoneID.zoneName) == [ZoneID.defaultZoneName])
    }

    @Test func everythingAndTokensSurviveReopeningTheDatabaseFile() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cloud.sqlite")
        var token: ChangeToken
        var tag: String
        do {
            let first = try CloudFixture(path: path)
            try first.makeZone()
            try first.save([record("a"), record("b")])
            token = try first.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone)).token
            tag = try #require(try first.fetch("b")?.recordChangeTag)
        }
        let reopened = try CloudFixture(path: path)
        #expect(reopened.engine.user(forCredential: "alice-secret") == "alice")
        try reopened.save([record("c")])
        let next = try reopened.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone, since: token))
        #expect(next.changed.map(\.recordName) == ["c"])
        #expect(next.changed.first?.recordChangeTag != tag)
        try reopened.save([record("b", title: "after restart", tag: tag)])
    }

    @Test("A cloud written with WITHOUT ROWID record tables is moved to rowid tables on open, records, versions and tokens intact")
    func recordTablesMoveToRowidTables() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cloud.sqlite")
        var token: ChangeToken
        var tag: String
        do {
            let first = try CloudFixture(path: path)
            try first.makeZone()
            try first.save([record("a"), record("b")])
            tag = try #require(try first.fetch("b")?.recordChangeTag)
            try first.save([record("b", title: "second", tag: tag)])
            token = try first.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone)).token
        }
        // Rewrite the two tables in the layout of earlier versions, rows and all.
        do {
            let db = try Database(path: path)
            try db.execute("""
                BEGIN;
                DROP INDEX records_by_seq; DROP INDEX records_by_parent; DROP INDEX tombstones_by_age; DROP INDEX record_versions_by_zone_age;
                ALTER TABLE records RENAME TO r; ALTER TABLE record_versions RENAME TO v;
                CREATE TABLE records(zone INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, fields TEXT,
                    tag TEXT NOT NULL, seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
                    created REAL NOT NULL, creator TEXT NOT NULL, modified REAL NOT NULL, modifier TEXT NOT NULL,
                    parent TEXT, share TEXT, PRIMARY KEY(zone, name)) WITHOUT ROWID;
                CREATE INDEX records_by_seq ON records(zone, seq);
                CREATE TABLE record_versions(zone INTEGER NOT NULL, name TEXT NOT NULL, tag TEXT NOT NULL, body TEXT NOT NULL,
                    superseded REAL NOT NULL, PRIMARY KEY(zone, name, tag)) WITHOUT ROWID;
                INSERT INTO records SELECT zone, name, type, fields, tag, seq, deleted, created, creator, modified, modifier, parent, share FROM r;
                INSERT INTO record_versions SELECT zone, name, tag, body, superseded FROM v;
                DROP TABLE r; DROP TABLE v;
                COMMIT;
                """)
            #expect(try db.scalar("SELECT count(*) FROM sqlite_master WHERE sql LIKE '%WITHOUT ROWID%'")?.int == 2)
        }
        let reopened = try CloudFixture(path: path)
        let check = try Database(path: path)
        #expect(try check.scalar("SELECT count(*) FROM sqlite_master WHERE sql LIKE '%WITHOUT ROWID%'")?.int == 0)
        #expect(try check.scalar("SELECT count(*) FROM sqlite_master WHERE name IN ('records_by_seq', 'records_by_parent', 'tombstones_by_age', 'record_versions_by_zone_age')")?.int == 4)
        #expect(try reopened.fetch("a")?.fields["CD_title"]?["value"] == "note")
        #expect(try reopened.fetch("b")?.fields["CD_title"]?["value"] == "second")
        // The superseded version is still there: a save with the old tag gets it as the ancestor.
        let stale = wireError { try reopened.save([record("b", title: "stale", tag: tag)]) }
        let item = stale?.details["partialErrors"]?.objectValue?.values.first
        #expect(item?["code"] == "serverRecordChanged")
        #expect(item?["details"]?["ancestorRecord"]?["fields"]?["CD_title"]?["value"] == "note")
        try reopened.save([record("c")])
        let next = try reopened.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone, since: token))
        #expect(next.changed.map(\.recordName) == ["c"])
    }

    @Test func snapshotExportThenImportReproducesTheCloud() throws {
        try cloud.save([record("session", type: "CD_CareSession"), record("e1", parent: "session")])
        try cloud.shareZone(with: [("alice", "readWrite")])
        let snapshot = try cloud.engine.exportSnapshot(includeCredentials: true).snapshot
        let other = try CloudEngine(database: Database.inMemory())
        let imported = try other.importSnapshot(snapshot)
        #expect(imported.users == 4)
        #expect(other.user(forCredential: "alice-secret") == "alice")
        let records = try other.fetchRecords(caller: "alice", FetchRecordsParams(database: .shared, recordIDs: [RecordID(recordName: "e1", zoneID: ownerZone)])).records
        #expect(records.first?.parent?.recordName == "session")
        let original = try #require(try cloud.fetch("e1"))
        #expect(records.first?.recordChangeTag == original.recordChangeTag)
        let again = try other.exportSnapshot().snapshot
        #expect(again.tables["records"] == snapshot.tables["records"])
        #expect(again.tables["participants"] == snapshot.tables["participants"])
    }

    /// A snapshot written before kept versions recorded the sequence that replaced them imports;
    /// such a version is an ancestor for the owner still, and for no participant.
    @Test func aSnapshotWithoutTheSupersedingSequenceImportsAndKeepsAncestorsFromParticipants() throws {
        let base = try #require(try cloud.save([record("a", title: "before sharing")]).saved.first?.recordChangeTag)
        let current = try #require(try cloud.save([record("a", title: "shared", tag: base)]).saved.first?.recordChangeTag)
        try cloud.shareZone(with: [("alice", "readWrite")])
        try cloud.save([record("a", title: "after", tag: current)])
        var snapshot = try cloud.engine.exportSnapshot(includeCredentials: true).snapshot
        snapshot.tables["record_versions"] = snapshot.tables["record_versions"]?.map { Array($0.dropLast()) }
        let other = try CloudEngine(database: Database.inMemory())
        _ = try other.importSnapshot(snapshot)
        func ancestor(_ user: String, _ database: DatabaseScope, _ zone: ZoneID, tag: String) -> JSONValue? {
            let error = wireError { _ = try other.modifyRecords(caller: user, ModifyParams(database: database, saves: [record("a", zone: zone, title: "stale", tag: tag)])) }
            return partialErrors(error)["a"]?.details["ancestorRecord"]
        }
        #expect(ancestor("owner", .private, zone, tag: base)?["fields"]?["CD_title"]?["value"] == "before sharing")
        #expect(ancestor("alice", .shared, ownerZone, tag: base) == .null)
        #expect(ancestor("alice", .shared, ownerZone, tag: current) == .null)
    }

    @Test("A snapshot without credentials imports into a cloud that knows its users; one that does not, or an empty credential, is refused")
    func snapshotCredentialsOnImport() throws {
        let snapshot = try cloud.engine.exportSnapshot().snapshot
        let credentialColumn = try #require(CloudSchema.snapshotTables.first { $0.name == "users" }?.columns.firstIndex(of: "credential"))
        #expect(snapshot.tables["users"]?.allSatisfy { $0[credentialColumn] == .null } == true)
        // The same cloud knows every user: they keep their credentials.
        _ = try cloud.engine.importSnapshot(snapshot)
        #expect(cloud.engine.user(forCredential: "alice-secret") == "alice")
        let other = try CloudEngine(database: Database.inMemory())
        #expect(wireError { _ = try other.importSnapshot(snapshot) }?.code == .invalidArguments)
        var empty = try cloud.engine.exportSnapshot(includeCredentials: true).snapshot
        var rows = try #require(empty.tables["users"])
        rows[0][credentialColumn] = ""
        empty.tables["users"] = rows
        #expect(wireError { _ = try other.importSnapshot(empty) }?.code == .invalidArguments)
        #expect(other.user(forCredential: "") == nil)
    }

    @Test("A snapshot's record fields are stored as a save would store them; text that is not fields is refused")
    func snapshotFieldsAreCanonical() throws {
        try cloud.save([record("a", title: "é and \"q\"")])
        var snapshot = try cloud.engine.exportSnapshot(includeCredentials: true).snapshot
        let fieldsColumn = try #require(CloudSchema.snapshotTables.first { $0.name == "records" }?.columns.firstIndex(of: "fields"))
        var rows = try #require(snapshot.tables["records"])
        let index = try #require(rows.firstIndex { $0[fieldsColumn].stringValue?.contains("CD_title") == true })
        rows[index][fieldsColumn] = .string(#" { "CD_title" : { "type" : "string", "value" : "spaced" }, "CD_gone": null } "#)
        snapshot.tables["records"] = rows
        let other = try CloudEngine(database: Database.inMemory())
        _ = try other.importSnapshot(snapshot)
        let page = try other.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone), fieldsAsText: true)
        #expect(page.changed.first?.fieldsText == #"{"CD_title":{"type":"string","value":"spaced"}}"#)
        rows[index][fieldsColumn] = .string("{not json")
        snapshot.tables["records"] = rows
        let refused = wireError { _ = try other.importSnapshot(snapshot) }
        #expect(refused?.code == .invalidArguments)
        // The refused import changed nothing.
        #expect(try other.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone)).changed.count == 1)
    }

    @Test func anEncryptedDataResetIsReportedSoDevicesReupload() throws {
        try cloud.save([record("a")])
        try cloud.shareZone(with: [("alice", "readOnly")])
        let start = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private))
        let aliceStart = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared))
        _ = try cloud.engine.reset(ResetParams(scope: "encryptedData", user: "owner"))
        let next = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private, since: start.token))
        #expect(next.encryptedDataResetZones == [zone])
        #expect(next.deletedZones.isEmpty && next.purgedZones.isEmpty)
        let aliceNext = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared, since: aliceStart.token))
        #expect(aliceNext.deletedZones == [ownerZone])
        #expect(partialErrors(wireError { try cloud.save([record("b")]) })["b"]?.code == .zoneNotFound)
    }

    @Test func resetOfOneZoneIsReportedAsPurged() throws {
        let start = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private))
        _ = try cloud.engine.reset(ResetParams(scope: "zone", zoneID: ownerZone))
        let next = try cloud.engine.fetchDatabaseChanges(caller: "owner", FetchDatabaseChangesParams(database: .private, since: start.token))
        #expect(next.purgedZones == [zone])
        _ = try cloud.engine.reset(ResetParams(scope: "all"))
        #expect(try cloud.engine.fetchZones(caller: "owner", ZonesParams(database: .private)).zones.map(\.zoneID.zoneName) == [ZoneID.defaultZoneName])
        #expect(cloud.engine.user(forCredential: "owner-secret") == "owner")
    }
}

/// The cloud in a file: fetches on read-only connections, cost independent of zone size.
@Suite struct FileBackedCloudTests {
    let dir = TemporaryDirectory()

    @Test func fetchingChangesIsAnIndexRangeScanOnZoneAndSequence() throws {
        let cloud = try CloudFixture(path: dir.file("cloud.sqlite"))
        for sql in [CloudTransaction.changesAfterSQL, CloudTransaction.liveRecordsAfterSQL] {
            let plan = try cloud.engine.locked { state in
                try state.db.query("EXPLAIN QUERY PLAN " + sql, [Int64(1), Int64(0), Int64(10)]).map { $0["detail"].string ?? "" }
            }
            #expect(plan.contains { $0.contains("USING INDEX records_by_seq (zone=? AND seq>?)") }, "\(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        }
    }

    @Test func readsOnReaderConnectionsSeeEveryCommittedWriteAndExpireOldTokens() async throws {
        let cloud = try CloudFixture(path: dir.file("cloud.sqlite"))
        try cloud.makeZone()
        var limits = LimitsParams()
        limits.retentionSeconds = 60
        _ = try cloud.engine.setLimits(limits)
        cloud.engine.setClock(1_780_000_000)
        let zone = ZoneID(zoneName: "Zone")
        var token = try cloud.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone)).token
        for index in 0..<20 {
            try cloud.save([record("r\(index)")])
            let page = try cloud.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone, since: token))
            #expect(page.changed.map(\.recordName) == ["r\(index)"])
            token = page.token
        }
        let engine = cloud.engine
        let counts = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await offThread {
                        (try? engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone)).changed.count) ?? -1
                    }
                }
            }
            var all: [Int] = []
            for await count in group { all.append(count) }
            return all
        }
        #expect(counts == Array(repeating: 20, count: 8))
        try cloud.delete(["r0"])
        cloud.engine.setClock(1_780_000_500)
        let error = wireError { _ = try engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone, since: token)) }
        #expect(error?.code == .changeTokenExpired)
    }

    @Test func concurrentModifiesOfManyZonesAndOneRecordStayConsistent() async throws {
        let cloud = try CloudFixture(path: dir.file("cloud.sqlite"))
        for name in ["A", "B", "C"] { try cloud.makeZone(name) }
        let tag = try #require(try cloud.save([record("shared-record", zone: ZoneID(zoneName: "A"))]).saved.first?.recordChangeTag)
        let engine = cloud.engine
        let results = await withTaskGroup(of: [String].self) { group in
            for worker in 0..<6 {
                group.addTask {
                    await offThread {
                        var outcomes: [String] = []
                        let zone = ZoneID(zoneName: ["A", "B", "C"][worker % 3])
                        for step in 0..<10 {
                            let saved = wireError {
                                _ = try engine.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [record("w\(worker)-\(step)", zone: zone)]))
                            }
                            outcomes.append(saved == nil ? "saved" : saved!.code.rawValue)
                        }
                        let race = wireError {
                            _ = try engine.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [record("shared-record", zone: ZoneID(zoneName: "A"), title: "w\(worker)", tag: tag)]))
                        }
                        outcomes.append(race == nil ? "raceWon" : partialErrors(race)["shared-record"]?.code.rawValue ?? race!.code.rawValue)
                        return outcomes
                    }
                }
            }
            var all: [String] = []
            for await outcomes in group { all += outcomes }
            return all
        }
        #expect(results.filter { $0 == "saved" }.count == 60)
        #expect(results.filter { $0 == "raceWon" }.count == 1)
        #expect(results.filter { $0 == "serverRecordChanged" }.count == 5)
        var total = 0
        for name in ["A", "B", "C"] {
            total += try engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: name), limit: 1000)).changed.count
        }
        #expect(total == 61)
        let tags = try ["A", "B", "C"].flatMap { name in
            try engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: name), limit: 1000)).changed.compactMap(\.recordChangeTag)
        }
        #expect(Set(tags).count == tags.count)
    }

    @Test(.timeLimit(.minutes(1)))
    func mixedConcurrentWorkFinishesAndLeavesASoundDatabase() async throws {
        let cloud = try CloudFixture(path: dir.file("cloud.sqlite"))
        try cloud.makeZone()
        try cloud.shareZone(with: [("alice", "readWrite"), ("bob", "readOnly")])
        let engine = cloud.engine
        let zone = ZoneID(zoneName: "Zone")
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    await offThread {
                        for step in 0..<15 {
                            switch (worker + step) % 5 {
                            case 0: _ = try? engine.modifyRecords(caller: "owner", ModifyParams(database: .private, saves: [record("o\(worker)-\(step)", zone: zone)]))
                            case 1: _ = try? engine.modifyRecords(caller: "alice", ModifyParams(database: .shared, saves: [record("a\(worker)-\(step)", zone: ownerZone)]))
                            case 2: _ = try? engine.fetchZoneChanges(caller: "bob", FetchZoneChangesParams(database: .shared, zoneID: ownerZone))
                            case 3:
                                _ = try? engine.leaveShare(caller: "bob", ShareParams(zoneID: ownerZone))
                                _ = try? engine.addParticipant(caller: "owner", ShareParams(zoneID: zone, user: "bob", permission: "readOnly"))
                                _ = try? engine.acceptShare(caller: "bob", ShareParams(zoneID: ownerZone))
                            default:
                                _ = try? engine.saveZones(caller: "owner", ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: "Z\(worker)")]))
                                _ = try? engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared))
                            }
                        }
                        if worker == 0 { _ = try? engine.reset(ResetParams(scope: "zone", zoneID: ZoneID(zoneName: "Z1", ownerName: "owner"))) }
                    }
                }
            }
        }
        let check = try engine.locked { try $0.db.integrityCheck() }
        #expect(check == "ok")
        let changes = try engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone, limit: 1000))
        #expect(changes.changed.contains { $0.recordName.hasPrefix("o") })
        #expect(changes.changed.contains { $0.recordName.hasPrefix("a") })
    }
}
