import CloudWire
import MeowWire
import Testing
@testable import SyncServiceKit

/// docs/RULES.md's shares and participants, and the decision table's shared-database rows, against the rules engine in-process.
@Suite struct ShareRulesTests {
    let cloud: CloudFixture
    init() throws {
        cloud = try CloudFixture()
        try cloud.makeZone()
    }

    /// The owner shares a session hierarchy (root "session" with share "share-1").
    func shareSession(with users: [(String, String)], accept: Bool = true) throws {
        try cloud.save([record("session", type: "CD_CareSession", share: "share-1"),
                        CloudRecord(recordName: "share-1", zoneID: ZoneID(zoneName: "Zone"), recordType: CloudKitNames.shareRecordType)])
        for (user, permission) in users {
            _ = try cloud.engine.addParticipant(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: "share-1", user: user, permission: permission))
            if accept { _ = try cloud.engine.acceptShare(caller: user, ShareParams(zoneID: ownerZone, shareName: "share-1")) }
        }
    }

    @Test func sharedDatabaseDefaultAndCoreDataZonesAreRefusedWithSeed002Text() throws {
        for zoneName in [ZoneID.defaultZoneName, ZoneID.coreDataZoneName] {
            let error = wireError { try cloud.save([record("e", zone: ZoneID(zoneName: zoneName))], as: "alice", database: .shared) }
            let item = try #require(partialErrors(error)["e"])
            #expect(item.code == .permissionFailure)
            #expect(item.message.contains("Illegal attempt to work with the core-data or default zone in the shared database"))
        }
    }

    @Test func sharedDatabaseRecordOutsideAnyShareIsPermissionFailure() throws {
        try shareSession(with: [("alice", "readWrite")])
        let item = partialErrors(wireError { try cloud.save([record("loose", zone: ownerZone)], as: "alice", database: .shared) })["loose"]
        #expect(item?.code == .permissionFailure)
        #expect(item?.details["reason"] == "record is outside any share")
    }

    @Test func readWriteParticipantSavesIntoTheHierarchyAndTheOwnerSeesIt() throws {
        try shareSession(with: [("alice", "readWrite")])
        try cloud.save([record("e1", zone: ownerZone, parent: "session")], as: "alice", database: .shared)
        let seen = try #require(try cloud.fetch("e1"))
        #expect(seen.lastModifiedUserRecordName == "alice")
        #expect(seen.zoneID == ZoneID(zoneName: "Zone"))
        let fromAlice = try #require(try cloud.fetch("e1", zone: ownerZone, as: "alice", database: .shared))
        #expect(fromAlice.zoneID == ownerZone)
    }

    @Test(arguments: ["readOnly", "pending", "removed", "stranger"])
    func writesByAnythingButAnAcceptedReadWriteParticipantArePermissionFailure(kind: String) throws {
        switch kind {
        case "readOnly": try shareSession(with: [("alice", "readOnly")])
        case "pending": try shareSession(with: [("alice", "readWrite")], accept: false)
        case "removed":
            try shareSession(with: [("alice", "readWrite")])
            _ = try cloud.engine.removeParticipant(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: "share-1", user: "alice"))
        default: try shareSession(with: [("bob", "readWrite")])
        }
        let error = wireError { try cloud.save([record("e1", zone: ownerZone, parent: "session")], as: "alice", database: .shared) }
        #expect(partialErrors(error)["e1"]?.code == .permissionFailure)
        #expect(partialErrors(wireError { _ = try cloud.fetch("e1") })["e1"]?.code == .unknownItem)
    }

    /// A participant reads a zone while accepted with a permission above none. At none the zone
    /// leaves their shared database; when reading begins again, zone tokens issued before
    /// answer changeTokenExpired, since the records they could not see are behind them.
    @Test func readingBeginsAndEndsWithPermissionNoneAndExpiresOlderTokens() throws {
        let zone = ZoneID(zoneName: "Zone")
        try cloud.save([record("r1")])
        try cloud.shareZone(zone, with: [("alice", "readOnly")], accept: false)
        _ = try cloud.engine.setParticipantPermission(caller: "owner", ShareParams(zoneID: zone, user: "alice", permission: "none"))
        _ = try cloud.engine.acceptShare(caller: "alice", ShareParams(zoneID: ownerZone))
        func databaseChanges(since token: String?) throws -> FetchDatabaseChangesResult {
            try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared, since: token))
        }
        func zoneChanges(since token: String?) throws -> FetchZoneChangesResult {
            try cloud.engine.fetchZoneChanges(caller: "alice", FetchZoneChangesParams(database: .shared, zoneID: ownerZone, since: token))
        }
        // Accepted at none: not in alice's shared database, and a fetch of it finds nothing.
        let start = try databaseChanges(since: nil)
        #expect(start.changedZones.isEmpty)
        let blind = try zoneChanges(since: nil)
        #expect(blind.changed.filter { $0.recordType == "CD_CareEvent" }.isEmpty)

        _ = try cloud.engine.setParticipantPermission(caller: "owner", ShareParams(zoneID: zone, user: "alice", permission: "readOnly"))
        #expect(try databaseChanges(since: start.token).changedZones.map(\.zoneName) == ["Zone"])
        // The token from the blind fetch is behind records alice can now read.
        #expect(wireError { _ = try zoneChanges(since: blind.token) }?.code == .changeTokenExpired)
        let seen = try zoneChanges(since: nil)
        #expect(seen.changed.map(\.recordName).contains("r1"))
        #expect(try zoneChanges(since: seen.token).changed.isEmpty)

        let beforeNone = try databaseChanges(since: nil).token
        _ = try cloud.engine.setParticipantPermission(caller: "owner", ShareParams(zoneID: zone, user: "alice", permission: "none"))
        let lost = try databaseChanges(since: beforeNone)
        #expect(lost.deletedZones.map(\.zoneName) == ["Zone"])
        #expect(lost.changedZones.isEmpty)
        // readOnly ↔ readWrite keeps reading: tokens stay good.
        _ = try cloud.engine.setParticipantPermission(caller: "owner", ShareParams(zoneID: zone, user: "alice", permission: "readWrite"))
        let again = try zoneChanges(since: nil)
        _ = try cloud.engine.setParticipantPermission(caller: "owner", ShareParams(zoneID: zone, user: "alice", permission: "readOnly"))
        #expect(wireError { _ = try zoneChanges(since: again.token) } == nil)
    }

    @Test func aNewShareWithoutItsRootIsInvalidArguments() throws {
        let error = wireError {
            try cloud.save([CloudRecord(recordName: "share-1", zoneID: ZoneID(zoneName: "Zone"), recordType: CloudKitNames.shareRecordType)])
        }
        #expect(partialErrors(error)["share-1"]?.code == .invalidArguments)
        #expect(partialErrors(error)["share-1"]?.details["ckErrorCode"] == 12)
    }

    @Test func aRecordInTwoSharesIsAlreadyShared() throws {
        try shareSession(with: [])
        let zoneWide = wireError {
            try cloud.save([CloudRecord(recordName: CloudKitNames.zoneShareName, zoneID: ZoneID(zoneName: "Zone"), recordType: CloudKitNames.shareRecordType)])
        }
        #expect(partialErrors(zoneWide)[CloudKitNames.zoneShareName]?.code == .alreadyShared)
        let nested = wireError {
            try cloud.save([record("inner", parent: "session", share: "share-2"),
                            CloudRecord(recordName: "share-2", zoneID: ZoneID(zoneName: "Zone"), recordType: CloudKitNames.shareRecordType)])
        }
        #expect(partialErrors(nested)["inner"]?.code == .alreadyShared)
        #expect(partialErrors(nested)["inner"]?.details["ckErrorCode"] == 30)
    }

    @Test func moreParticipantsThanTheLimitIsTooManyParticipants() throws {
        var limits = LimitsParams()
        limits.maxParticipants = 3  // the owner counts as one
        _ = try cloud.engine.setLimits(limits)
        try shareSession(with: [("alice", "readOnly"), ("bob", "readOnly")])
        let error = wireError {
            _ = try cloud.engine.addParticipant(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: "share-1", user: "carol", permission: "readOnly"))
        }
        #expect(error?.code == .tooManyParticipants)
        #expect(error?.details["ckErrorCode"] == 29)
    }

    @Test func onlyTheOwnerDeletesTheRootAndAParticipantDeletingTheShareLeaves() throws {
        try shareSession(with: [("alice", "readWrite")])
        let rootDelete = wireError { try cloud.delete(["session"], zone: ownerZone, as: "alice", database: .shared) }
        #expect(partialErrors(rootDelete)["session"]?.code == .permissionFailure)
        try cloud.delete(["share-1"], zone: ownerZone, as: "alice", database: .shared)
        #expect(try cloud.engine.fetchZones(caller: "alice", ZonesParams(database: .shared)).zones.isEmpty)
        let share = try cloud.engine.fetchShare(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: "share-1")).share
        #expect(share.shareInfo?.participants.first { $0.userRecordName == "alice" }?.acceptanceStatus == .removed)
    }

    @Test func theOwnerDeletingTheRootEndsTheShareForParticipants() throws {
        try shareSession(with: [("alice", "readWrite")])
        try cloud.save([record("e1", parent: "session")])
        let before = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared))
        #expect(before.changedZones == [ownerZone])
        try cloud.delete(["e1", "session"])
        let after = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared, since: before.token))
        #expect(after.deletedZones == [ownerZone])
        #expect(partialErrors(wireError { _ = try cloud.fetch("share-1") })["share-1"]?.code == .unknownItem)
    }

    /// The service writes only CloudKit's spellings; one that is not (a damaged row) is an error
    /// naming the row wherever it is read, never a permission: read as "not none" it granted reads.
    @Test func aDamagedParticipantRowIsAnErrorNotAPermission() throws {
        try shareSession(with: [("alice", "readOnly")])
        try cloud.engine.write { state in try state.db.execute("UPDATE participants SET permission = 'admin' WHERE user = 'alice'") }
        let read = partialErrors(wireError { _ = try cloud.fetch("session", zone: ownerZone, as: "alice", database: .shared) })["session"]
        #expect(read?.code == .internalError)
        #expect(read?.message.contains("user 'alice', column permission, holds 'admin', which is not a share permission (none, readOnly, readWrite)") == true,
                "\(read?.message ?? "no error")")
        let owner = wireError { _ = try cloud.engine.fetchShare(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: "share-1")) }
        #expect(owner?.code == .internalError)
        #expect(wireError { _ = try cloud.engine.ownedShares(caller: "owner") }?.code == .internalError)
    }

    @Test func publicPermissionNoneRemovesEveryParticipant() throws {
        try shareSession(with: [("alice", "readWrite"), ("bob", "readOnly")])
        let share = try cloud.engine.setPublicPermission(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: "share-1", permission: "none")).share
        let states = share.shareInfo?.participants.filter { $0.role != .owner }.map(\.acceptanceStatus)
        #expect(states == [.removed, .removed])
        #expect(try cloud.engine.fetchZones(caller: "bob", ZonesParams(database: .shared)).zones.isEmpty)
    }

    @Test func aPublicShareCanBeAcceptedByAnyUser() throws {
        try shareSession(with: [])
        _ = try cloud.engine.setPublicPermission(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: "share-1", permission: "readOnly"))
        let share = try cloud.engine.acceptShare(caller: "carol", ShareParams(zoneID: ownerZone, shareName: "share-1")).share
        #expect(share.shareInfo?.participants.contains { $0.userRecordName == "carol" && $0.role == .publicUser && $0.acceptanceStatus == .accepted } == true)
        #expect(partialErrors(wireError { try cloud.save([record("x", zone: ownerZone, parent: "session")], as: "carol", database: .shared) })["x"]?.code == .permissionFailure)
    }

    @Test func aShareRecordIsAlwaysSavedIfServerRecordUnchanged() throws {
        try shareSession(with: [])
        let error = wireError {
            try cloud.save([CloudRecord(recordName: "share-1", zoneID: ZoneID(zoneName: "Zone"), recordType: CloudKitNames.shareRecordType, recordChangeTag: "stale")],
                           policy: .allKeys)
        }
        #expect(partialErrors(error)["share-1"]?.code == .serverRecordChanged)
    }

    @Test func hierarchyParticipantsSeeOnlyTheirHierarchy() throws {
        try shareSession(with: [("alice", "readOnly")])
        try cloud.save([record("e1", parent: "session"), record("private-note")])
        let changes = try cloud.engine.fetchZoneChanges(caller: "alice", FetchZoneChangesParams(database: .shared, zoneID: ownerZone))
        #expect(Set(changes.changed.map(\.recordName)) == ["session", "share-1", "e1"])
        try cloud.delete(["e1", "private-note"])
        let next = try cloud.engine.fetchZoneChanges(caller: "alice", FetchZoneChangesParams(database: .shared, zoneID: ownerZone, since: changes.token))
        #expect(next.deleted.map(\.recordName) == ["e1"])
    }

    @Test func zoneWideShareShowsTheWholeZoneInTheSharedDatabase() throws {
        try cloud.save([record("a"), record("b")])
        try cloud.shareZone(with: [("alice", "readWrite")])
        let zones = try cloud.engine.fetchZones(caller: "alice", ZonesParams(database: .shared)).zones
        #expect(zones.map(\.zoneID) == [ownerZone])
        #expect(zones.first?.zoneShare == CloudKitNames.zoneShareName)
        try cloud.save([record("c", zone: ownerZone)], as: "alice", database: .shared)
        let changes = try cloud.engine.fetchZoneChanges(caller: "alice", FetchZoneChangesParams(database: .shared, zoneID: ownerZone))
        #expect(Set(changes.changed.map(\.recordName)) == ["a", "b", "c", CloudKitNames.zoneShareName])
    }

    @Test func downgradedParticipantIsRefusedAndTheServerIsUnchanged() throws {
        try cloud.save([record("a", title: "owner's")])
        try cloud.shareZone(with: [("alice", "readWrite")])
        let tag = try #require(try cloud.fetch("a")?.recordChangeTag)
        _ = try cloud.engine.setParticipantPermission(caller: "owner", ShareParams(zoneID: ZoneID(zoneName: "Zone"), shareName: CloudKitNames.zoneShareName,
                                                                                    user: "alice", permission: "readOnly"))
        let error = wireError { try cloud.save([record("a", zone: ownerZone, title: "alice's", tag: tag), record("new", zone: ownerZone)], as: "alice", database: .shared) }
        #expect(partialErrors(error)["a"]?.code == .permissionFailure)
        #expect(partialErrors(error)["new"]?.code == .permissionFailure)
        #expect(title(try cloud.fetch("a")) == "owner's")
    }

    @Test func theOwnerDeletingTheShareRecordStopsSharingAndClearsTheRoot() throws {
        try shareSession(with: [("alice", "readWrite")])
        let start = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared))
        try cloud.delete(["share-1"])
        #expect(try cloud.fetch("session")?.share == nil)
        let next = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared, since: start.token))
        #expect(next.deletedZones == [ownerZone])
        let write = wireError { try cloud.save([record("e1", zone: ownerZone, parent: "session")], as: "alice", database: .shared) }
        #expect(partialErrors(write)["e1"]?.code == .permissionFailure)
        try cloud.save([record("session", type: "CD_CareSession", tag: try cloud.fetch("session")?.recordChangeTag, share: "share-2"),
                        CloudRecord(recordName: "share-2", zoneID: ZoneID(zoneName: "Zone"), recordType: CloudKitNames.shareRecordType)])
        #expect(try cloud.fetch("session")?.share?.recordName == "share-2")
    }

    @Test func resettingAUserRemovesTheirZonesFromParticipantsAndTheirParticipations() throws {
        try shareSession(with: [("alice", "readWrite")])
        let start = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared))
        _ = try cloud.engine.reset(ResetParams(scope: "user", user: "owner"))
        let next = try cloud.engine.fetchDatabaseChanges(caller: "alice", FetchDatabaseChangesParams(database: .shared, since: start.token))
        #expect(next.deletedZones == [ownerZone])
        #expect(try cloud.engine.fetchZones(caller: "owner", ZonesParams(database: .private)).zones.map(\.zoneID.zoneName) == [ZoneID.defaultZoneName])
    }
}
