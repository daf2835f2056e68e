import CloudWire
import MeowWire
import StoreWire
import Testing

/// The mirror's share and status answers and the orphan repair's report read back as written.
@Suite("StoreWire: the mirror's answers and the orphan repair's")
struct MirrorResultsTests {
    static let zone = ZoneID(zoneName: "com.apple.coredata.cloudkit.share.A", ownerName: "alice")
    static let share = CloudRecord(recordName: CloudKitNames.zoneShareName, zoneID: zone, recordType: CloudKitNames.shareRecordType)

    @Test("share.list, share.setMetadata, share.create and share.accept")
    func shares() throws {
        let list = ShareListResult(shares: [.init(zoneName: Self.zone.zoneName, ownerName: "alice", permission: .readOnly)])
        #expect(try roundTrip(list, op: "share.list") == list)
        #expect(try written(list) == ["shares": [["zoneName": .string(Self.zone.zoneName), "ownerName": "alice", "permission": "readOnly"]]])
        let metadata = ShareMetadataResult(zoneName: Self.zone.zoneName, permission: .readWrite, zonedObjects: 2)
        #expect(try roundTrip(metadata, op: "share.setMetadata") == metadata)
        let created = ShareCreation(zoneName: Self.zone.zoneName, rootRecordName: "root", movedRecords: 3, pendingRecords: 1,
                                    sendError: WireError(.zoneBusy, "busy"), share: Self.share)
        // A record read keeps its fields as their text, so records compare by what they write.
        #expect(try written(roundTrip(created, op: "share.create")) == written(created))
        let unshared = ShareCreation(zoneName: Self.zone.zoneName, rootRecordName: "root", movedRecords: 0, pendingRecords: 4,
                                     sendError: nil, share: nil)
        #expect(try roundTrip(unshared, op: "share.create") == unshared)
        #expect(try written(unshared)["share"] == .null, "written as null, as the service always wrote it")
        #expect(try written(unshared)["sendError"] == nil)
        let accepted = ShareAcceptance(zoneName: Self.zone.zoneName, ownerName: "alice", share: Self.share, fetch: SyncFetchResult())
        #expect(try written(roundTrip(accepted, op: "share.accept")) == written(accepted))
    }

    @Test("an unknown permission in share.list is an error naming the field, not a default")
    func unknownPermission() throws {
        let reply: JSONValue = ["shares": [["zoneName": "z", "ownerName": "alice", "permission": "owner"]]]
        let error = #expect(throws: WireError.self) { try StoreReply.read(ShareListResult.self, from: reply, op: "share.list") }
        #expect(error?.details["field"] == "result.shares[0].permission")
    }

    @Test("sync.status: every store's queue, refusals and waiting links, and the sums")
    func status() throws {
        let store = SyncStatus.Store(
            store: "Private", database: .private, pending: 2, pendingByZone: ["alice/com.apple.coredata.cloudkit.zone": 2], deferred: 1,
            exportCursor: 4, historyToken: 9, unqueuedTransactions: 0, databaseToken: "d1", zoneTokens: ["alice/z": "t"],
            unexportable: ["x-coredata://S/CareEvent/p1"],
            refusedExports: [.init(recordName: "r1", entity: "CareEvent", store: "Private", code: "invalidArguments", message: "no field",
                                   recordType: "CD_CareEvent", field: "CD_mood", environment: "production")],
            unimportable: [.init(recordName: "r2", entity: "CareEvent", zone: "alice/z", recordChangeTag: nil, code: "validationStringPatternMatching",
                                 message: "not a kind")],
            deletesRemembered: 1, tombstonesHeld: 0,
            pendingLinks: [.init(recordName: "r3", entity: "CareEvent", relationship: "session", target: "s1", zone: nil, waitingSeconds: 3)],
            unsent: nil)
        var shared = store
        (shared.store, shared.database, shared.pending, shared.deferred, shared.unsent) = ("Shared", .shared, 1, 0, [])
        let status = SyncStatus(user: "alice", signedIn: true, device: "A", environment: .production, mode: .automatic,
                                conflictPolicy: .latestEdit, stores: [store, shared], inFlight: "fetch", lastError: nil,
                                lastSuccess: "2026-11-30T08:00:00.000Z", batchLimit: 400, quiescent: false)
        let read = try roundTrip(status, op: "sync.status")
        #expect(read == status)
        #expect((read.pending, read.deferred) == (3, 1))
        #expect(try written(status)["stores"]?.arrayValue?.first?["unsent"] == nil, "listed only when asked")
    }

    @Test("repair.orphans' report")
    func orphanRepair() throws {
        let report = OrphanRepairReport(session: "x-coredata://S/CareSession/p1", sessionCreated: true, attached: 1,
                                        attachedObjectIDs: ["x-coredata://S/CareEvent/p2"], assigned: [],
                                        skipped: [.init(objectID: "x-coredata://T/CareEvent/p3", store: "Shared", reason: "another store")],
                                        skippedCount: 1, truncated: false)
        #expect(try roundTrip(report, op: "repair.orphans") == report)
    }
}
