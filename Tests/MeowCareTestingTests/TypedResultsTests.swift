import MeowCareTesting
import Testing

/// The library reads the store-service's answers as StoreWire's types, the ones the service
/// writes: every field of a real reply reads, none is re-declared or picked out by hand.
@Suite struct TypedResultsTests {
    @Test(.meowCluster(devices: ["A": "olivia", "P": "pablo"]))
    func aReadOnlyParticipantsMetadataPermissionsAndStatusReadAsTheirTypes() async throws {
        let cluster = try MeowCluster.current
        let owner = cluster["A"], participant = cluster["P"]
        let session = try await owner.insert("CareSession", ["id": "s1", "title": "Mochi"])
        let created = try await owner.share.create(session.objectID, participants: [("pablo", .readOnly)])
        #expect(created.share?.recordName == CloudKitNames.zoneShareName)
        #expect(created.share?.zoneID.zoneName == created.zoneName)
        let accepted = try await participant.share.accept(zoneName: created.zoneName, ownerName: owner.user)
        #expect(accepted.share.shareInfo?.participants.contains { $0.userRecordName == "pablo" && $0.permission == .readOnly } == true)
        #expect(accepted.fetch.changedRecords >= 1)

        #expect(try await participant.share.list() == [ShareMetadata(zoneName: created.zoneName, ownerName: owner.user, permission: .readOnly)])
        let shared = try #require(try await participant.fetch("CareSession", where: "id == %@", ["s1"]).first)
        let permissions = try await participant.permissionCheck([shared.objectID])
        #expect(permissions.canModifyManagedObjects == ["Private": true, "Shared": false])
        #expect(permissions.objects == [.init(objectID: shared.objectID, canUpdateRecord: false, canDeleteRecord: false)])

        let status = try await participant.sync.status()
        #expect(status.user == "pablo")
        #expect(status.mode == .manual)
        #expect(status.stores.map(\.database) == [.private, .shared])
        #expect(status.quiescent)
    }

    @Test(.meowCluster(devices: ["A"]))
    func anOrphanRepairReportsWhatItAttached() async throws {
        let device = try MeowCluster.current["A"]
        let orphan = try await device.insert("CareEvent", ["id": "e1", "eventTypeRaw": "note"])
        let report = try await device.repairOrphans()
        #expect(report.attached == 1)
        #expect(report.attachedObjectIDs == [orphan.objectID])
        #expect(report.skipped.isEmpty && report.skippedCount == 0 && !report.truncated)
        #expect(try await device.object(orphan.objectID)["session"] == .string(report.session))
        #expect(try await device.repairOrphans().attached == 0, "nothing is left to attach")
    }
}
