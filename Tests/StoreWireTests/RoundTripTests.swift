import MeowWire
import StoreWire
import Testing

/// Each result reads back as what the service wrote, optional keys included.
@Suite("StoreWire results round-trip")
struct RoundTripTests {
    static let object = ManagedObject(objectID: "x-coredata://S/CareEvent/p1", entity: "CareEvent", store: "Shared", version: 3, uuid: "u1",
                                      zone: "com.apple.coredata.cloudkit.share.A", zoneOwner: "alice",
                                      values: ["title": "Mochi", "value": 1.5, "count": 2, "flag": true, "note": nil, "tags": ["a", "b"]],
                                      isInserted: false, isDeleted: false, hasChanges: true)

    @Test("an object: every field, values of each JSON type")
    func object() throws {
        #expect(try roundTrip(Self.object, op: "object.get") == Self.object)
        let unrouted = ManagedObject(objectID: "x-coredata:///CareEvent/t1", entity: "CareEvent", store: nil, version: 0, uuid: "u2",
                                     zone: nil, zoneOwner: nil, values: [:])
        #expect(try roundTrip(unrouted, op: "object.get") == unrouted)
        #expect(try roundTrip(FetchedObjects(objects: [Self.object, unrouted]), op: "fetch") == FetchedObjects(objects: [Self.object, unrouted]))
    }

    @Test("an object writes store and zone as null when unset, zoneOwner and the context flags only when set")
    func objectOptionalKeys() throws {
        let unrouted = ManagedObject(objectID: "x-coredata:///CareEvent/t1", entity: "CareEvent", store: nil, version: 0, uuid: "u2",
                                     zone: nil, zoneOwner: nil, values: ["note": nil])
        let members = try #require(try written(unrouted).objectValue)
        #expect(members["store"] == .null)
        #expect(members["zone"] == .null)
        #expect(members["values"] == ["note": nil])
        for absent in ["zoneOwner", "isInserted", "isDeleted", "hasChanges"] { #expect(members[absent] == nil, "\(absent)") }
    }

    @Test("a save: inserted, grouped, merged, transactions; a summary leaves updated and deleted out")
    func save() throws {
        var result = SaveResult()
        result.inserted = [.init(temporaryID: "t1", objectID: "p1", store: "Private", reason: .relatedObject)]
        result.insertedGroups = [.init(store: "Shared", reason: .assigned, temporaryIDs: ["t2", "t3"], objectIDs: ["p2", "p3"])]
        result.updated = ["p4"]
        result.deleted = ["p5"]
        (result.insertedCount, result.updatedCount, result.deletedCount) = (3, 1, 1)
        result.merged = [.init(objectID: "p4", policy: .mergeByPropertyObjectTrump, written: ["title"], dropped: [], oldVersion: 1, newVersion: 3),
                         .init(objectID: "p6", policy: .rollback, written: [], dropped: ["(delete)"], oldVersion: 1, newVersion: nil)]
        result.transactions = [.init(store: "Private", storeUUID: "S", token: 7)]
        result.unexportable = ["p3"]
        let read = try roundTrip(result, op: "context.save")
        #expect(read == result)
        #expect(read.objectID(for: "t1") == "p1")
        #expect(read.objectID(for: "t3") == "p3")

        var summary = SaveResult()
        summary.updated = nil
        summary.deleted = nil
        let members = try #require(try written(summary).objectValue)
        #expect(Set(members.keys) == ["insertedCount", "updatedCount", "deletedCount", "merged", "transactions"])
        #expect(try roundTrip(summary, op: "context.save") == summary)
    }

    @Test("history: transactions with inserts, updates and tombstones, and the last tokens")
    func history() throws {
        let result = HistoryResult(transactions: [
            .init(store: "Private", storeUUID: "S", token: 1, timestamp: "2026-07-27T08:00:00.000Z", author: "app", contextName: "c",
                  changes: [.init(kind: "insert", objectID: "p1", entity: "CareEvent", uuid: "u1", changedProperties: ["title"], tombstone: nil),
                            .init(kind: "delete", objectID: "p2", entity: "CareEvent", uuid: "u2", changedProperties: nil,
                                  tombstone: ["uuid": "u2", "id": "e2"])]),
            .init(store: "Private", storeUUID: "S", token: 2, timestamp: "2026-07-27T08:00:01.000Z", author: "NSCloudKitMirroringDelegate.import",
                  contextName: nil, changes: []),
        ], lastTokens: ["Private": 2, "Shared": 0])
        #expect(try roundTrip(result, op: "history.fetch") == result)
        #expect(try roundTrip(HistoryPurgeResult(store: "Private", purgedTransactions: 4), op: "history.purge").purgedTransactions == 4)
    }

    @Test("stores, contexts, objects' identities, counts, permissions and the clock")
    func smallResults() throws {
        let stores = StoreListResult(stores: [
            .init(name: "Private", scope: .private, url: "file:///d/MeowCare-Private.sqlite", storeUUID: "S1", path: "/d/MeowCare-Private.sqlite",
                  entities: ["CareEvent"], lastHistoryToken: 3),
            .init(name: "Shared", scope: .shared, url: "memory:///x", storeUUID: "S2", path: nil, entities: [], lastHistoryToken: 0),
        ], routing: .deterministic)
        #expect(try roundTrip(stores, op: "store.list") == stores)
        let open = ContextOpenResult(context: "c1", name: nil, author: "app", mergePolicy: .error)
        #expect(try roundTrip(open, op: "context.open") == open)
        #expect(try roundTrip(ContextStateResult(context: "c1", registeredObjects: 2), op: "context.reset") == ContextStateResult(context: "c1", registeredObjects: 2))
        #expect(try roundTrip(ClosedResult(closed: true), op: "context.close").closed)
        #expect(try roundTrip(RefreshResult(refreshed: 2, forgotten: 1), op: "context.refresh") == RefreshResult(refreshed: 2, forgotten: 1))
        for insert in [InsertResult(objectID: "t1", insertedCount: 1), InsertResult(objectIDs: ["t1", "t2"], insertedCount: 2), InsertResult(insertedCount: 5)] {
            #expect(try roundTrip(insert, op: "object.insert") == insert)
        }
        #expect(try roundTrip(AssignResult(objectID: "t1", store: "Shared"), op: "object.assign") == AssignResult(objectID: "t1", store: "Shared"))
        #expect(try roundTrip(DeleteResult(objectID: "p1", isDeleted: true), op: "object.delete") == DeleteResult(objectID: "p1", isDeleted: true))
        let obtained = ObtainResult(objects: [.init(temporaryID: "t1", objectID: "p1", store: "Private", reason: .privateStoreDefault)])
        #expect(try roundTrip(obtained, op: "object.obtainPermanentIDs") == obtained)
        let moved = MoveResult(objectID: "t9", deletedObjectID: "p1", store: "Shared")
        #expect(try roundTrip(moved, op: "object.moveToStore") == moved)
        #expect(try roundTrip(CountResult(count: 12), op: "fetch.count").count == 12)
        let rows = FetchedRows(columns: ["objectID", "store"], rows: [["p1", "Private"]] as [[JSONValue]])
        let readRows = try roundTrip(rows, op: "fetch")
        #expect(readRows.columns == rows.columns && readRows.rows == rows.rows)
        let permissions = PermissionResult(canModifyManagedObjects: ["Private": true, "Shared": false],
                                           objects: [.init(objectID: "p1", canUpdateRecord: false, canDeleteRecord: false)])
        #expect(try roundTrip(permissions, op: "permission.check") == permissions)
        let clock = DeviceClockState(now: 1_780_000_000.5, offsetSeconds: -3600)
        #expect(try roundTrip(clock, op: "clock.set") == clock)
    }

    @Test("the mirror's sync.send, sync.fetch, sync.now, sync.initializeSchema and account.* answers")
    func syncResults() throws {
        var send = SyncSendResult()
        (send.saved, send.conflictsResolved, send.refused, send.requests, send.retryAfterSeconds) = (3, 1, 2, 2, 1.5)
        var fetch = SyncFetchResult()
        (fetch.changedRecords, fetch.pages, fetch.zonesRemoved, fetch.tokensExpired) = (5, 2, ["purged:alice/z"], 1)
        #expect(try roundTrip(send, op: "sync.send") == send)
        #expect(try written(SyncSendResult()).objectValue?["retryAfterSeconds"] == nil)
        #expect(try roundTrip(fetch, op: "sync.fetch") == fetch)
        let now = try roundTrip(SyncNowResult(send: send, fetch: fetch), op: "sync.now")
        #expect(now == SyncNowResult(send: send, fetch: fetch))
        #expect(now.changedAnything)
        #expect(!SyncNowResult(send: SyncSendResult(), fetch: SyncFetchResult()).changedAnything)
        let signedOut = AccountResult(signedIn: false, user: nil, objectsRemoved: 12)
        #expect(try roundTrip(signedOut, op: "account.signOut") == signedOut)
        #expect(try written(signedOut) == ["signedIn": false, "objectsRemoved": 12])
        #expect(try roundTrip(AccountResult(signedIn: true, user: "alice"), op: "account.signIn").user == "alice")
        let schema = SchemaInitialization(recordTypes: ["CD_CareEvent": ["CD_title": "STRING"]], uploaded: 1, dryRun: false)
        #expect(try roundTrip(schema, op: "sync.initializeSchema") == schema)
    }

    @Test("clock.set's params: a null now is kept apart from an absent one")
    func clockParams() throws {
        #expect(try written(DeviceClockParams(now: .some(nil))) == ["now": nil])
        #expect(try written(DeviceClockParams()) == [:])
        #expect(try JSONValueDecoder().decode(DeviceClockParams.self, from: ["now": nil]).now == .some(nil))
        #expect(try JSONValueDecoder().decode(DeviceClockParams.self, from: [:]).now == nil)
        #expect(try JSONValueDecoder().decode(DeviceClockParams.self, from: ["advanceSeconds": 60]).advanceSeconds == 60)
    }
}
