import MeowCareTesting
import Testing

/// A two-user share flow through the library, as an app team would write it.
@Suite struct SharingFlowTests {
    /// Olivia (devices A and B) shares a session with Pablo (device P) read-only.
    private func sharedSession(_ cluster: MeowCluster) async throws -> (zone: String, session: ManagedObject) {
        let owner = cluster["A"], participant = cluster["P"]
        let session = try await owner.insert("CareSession", ["id": "s1", "title": "Mochi"])
        let share = try await owner.share.create(session.objectID, participants: [("pablo", .readOnly)])
        try await participant.share.accept(zoneName: share.zoneName, ownerName: owner.user)
        try await cluster.settle()
        return (share.zoneName, session)
    }

    @Test(.meowCluster(devices: ["A": "olivia", "B": "olivia", "P": "pablo"]))
    func aSharedSessionReachesTheParticipantAndEveryStoreMatchesTheCloud() async throws {
        let cluster = try MeowCluster.current
        let (zone, _) = try await sharedSession(cluster)
        let seen = try await cluster["P"].fetch("CareSession", where: "id == %@", ["s1"])
        #expect(seen.map(\.store) == ["Shared"])
        #expect(seen.first?.zone == zone)
        #expect(try await cluster["B"].fetch("CareSession").map { $0["title"] } == ["Mochi"])
        try await cluster.assertConverged()
        try await cluster.assertInvariants()
    }

    @Test(.meowCluster(devices: ["A": "olivia", "P": "pablo", "Q": "quinn"]))
    func acceptingUnderTheWrongOwnerNamesTheOwnerToUse() async throws {
        let cluster = try MeowCluster.current
        let session = try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        let share = try await cluster["A"].share.create(session.objectID, participants: [("pablo", .readOnly)])
        let wrong = await #expect(throws: MeowCareError.self) { try await cluster["P"].share.accept(zoneName: share.zoneName, ownerName: "pablo") }
        #expect(wrong?.code == .invalidArguments)  // the participant named themself: owners do not accept
        let other = await #expect(throws: MeowCareError.self) { try await cluster["P"].share.accept(zoneName: share.zoneName, ownerName: "quinn") }
        #expect(other?.code == .zoneNotFound)
        #expect(other?.message.contains("Pass ownerName 'olivia'") == true, "\(other?.message ?? "")")
        // Someone never invited learns nothing about who owns a zone of that name.
        let stranger = await #expect(throws: MeowCareError.self) { try await cluster["Q"].share.accept(zoneName: share.zoneName, ownerName: "pablo") }
        #expect(stranger?.code == .zoneNotFound)
        #expect(stranger?.message.contains("olivia") == false)
        try await cluster["P"].share.accept(zoneName: share.zoneName, ownerName: "olivia")
        try await cluster.settle()
        #expect(try await cluster["P"].fetch("CareSession").map { $0["title"] } == ["Mochi"])
    }

    @Test(.meowCluster(devices: ["A": "olivia", "P": "pablo"]))
    func aReadOnlyParticipantsWriteIsRefusedWithCloudKitsError() async throws {
        let cluster = try MeowCluster.current
        let (zone, _) = try await sharedSession(cluster)
        let shared = try #require(try await cluster["P"].fetch("CareSession").first)
        // The device refuses the save itself, as NSPersistentCloudKitContainer does.
        let refused = await #expect(throws: MeowCareError.self) { try await cluster["P"].update(shared.objectID, ["title": "Mine"]) }
        #expect(refused?.code == .permissionFailure)
        #expect(refused?.ckErrorCode == 10)
        // The server refuses the same write from any client: partialFailure, item permissionFailure.
        let pablo = try await cluster.cloud.user("pablo")
        var record = try #require(try await pablo.records(in: ZoneID(zoneName: zone, ownerName: "olivia"), .shared)
            .first { $0.recordType == "CD_CareSession" })
        record.fields["CD_title"] = ["type": "string", "value": "Mine"]
        let serverRefusal = await #expect(throws: MeowCareError.self) { try await pablo.modify(.shared, saving: [record]) }
        #expect(serverRefusal?.code == .partialFailure)
        #expect(serverRefusal?.partialErrors[record.recordName]?.code == .permissionFailure)
        try await cluster.assertConverged()
    }

    @Test(.meowCluster(devices: ["A": "olivia", "B": "olivia"]))
    func concurrentEditsOfOneFieldResolveToTheLaterEditEverywhere() async throws {
        let cluster = try MeowCluster.current
        let session = try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        try await cluster.settle()
        let onB = try #require(try await cluster["B"].fetch("CareSession").first)
        try await cluster["A"].update(session.objectID, ["title": "Mochi (A)"])
        try await cluster["B"].update(onB.objectID, ["title": "Mochi (B)"])
        try await cluster["A"].sync.send()
        let merged = try await cluster["B"].sync.send()
        #expect(merged.conflictsResolved == 1)
        try await cluster.settle()
        #expect(try await cluster["A"].object(session.objectID)["title"] == "Mochi (B)")
        try await cluster.assertConverged()
    }

    @Test(.meowCluster(devices: ["A": "olivia"]))
    func aStaleSaveFromAnotherClientCarriesTheServersClientsAndAncestorsRecords() async throws {
        let cluster = try MeowCluster.current
        try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        try await cluster.settle()
        let olivia = try await cluster.cloud.user("olivia")
        let stale = try #require(try await olivia.records(in: .coreData).first { $0.recordType == "CD_CareSession" })
        var first = stale
        first.fields["CD_title"] = ["type": "string", "value": "First"]
        try await olivia.modify(saving: [first])
        var second = stale
        second.fields["CD_title"] = ["type": "string", "value": "Second"]
        let error = await #expect(throws: MeowCareError.self) { try await olivia.modify(saving: [second]) }
        #expect(error?.partialErrors[stale.recordName]?.code == .serverRecordChanged)
        let conflict = try #require(error?.conflict)
        #expect(conflict.server.fields["CD_title"]?["value"] == "First")
        #expect(conflict.client?.fields["CD_title"]?["value"] == "Second")
        #expect(conflict.ancestor?.recordChangeTag == stale.recordChangeTag)
    }

    @Test(.meowCluster(devices: ["A": "olivia", "B": "olivia"]))
    func aFetchedChangeArrivesAsARemoteChangeEvent() async throws {
        let cluster = try MeowCluster.current
        let events = try await cluster["B"].events(["remoteChange"])
        try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        try await cluster.settle()
        var iterator = events.makeAsyncIterator()
        let event = try #require(await iterator.next())
        #expect(event.name == "remoteChange")
        #expect(event.data["author"] == "sync")
    }
}
