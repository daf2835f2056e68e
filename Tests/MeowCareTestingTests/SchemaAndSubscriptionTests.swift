import CloudWire
import MeowCareTesting
import MeowWire
import Testing

/// The library's typed calls for the schema's life and for subscriptions.
@Suite struct SchemaAndSubscriptionTests {
    @Test(.meowCluster(devices: ["A": "olivia"]))
    func theSchemaIsExportedDiffedDeployedAndReset() async throws {
        let cluster = try MeowCluster.current
        _ = try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        try await cluster["A"].sync.send()
        let admin = cluster.cloud.admin
        #expect(try await admin.exportSchema().contains("RECORD TYPE \"CD_CareSession\""))
        #expect(try await admin.exportSchema(environment: .production) == "DEFINE SCHEMA\n")
        #expect(try await admin.diffSchema()["deployable"] == true)
        #expect(try await admin.deploySchema()["newRecordTypes"]?.arrayValue?.contains("CD_CareSession") == true)
        let imported = try await admin.importSchema("DEFINE SCHEMA RECORD TYPE CD_Visit (\"CD_clinic\" STRING);")
        #expect(imported["newRecordTypes"] == ["CD_Visit"])
        _ = try await admin.resetDevelopment()
        #expect(try await admin.diffSchema()["identical"] == true)
    }

    @Test(.meowCluster(devices: ["A": "olivia"]))
    func subscriptionsAreSavedFetchedAndDeleted() async throws {
        let cluster = try MeowCluster.current
        let olivia = try await cluster.cloud.user("olivia")
        let saved = try await olivia.saveSubscriptions([CloudSubscription(subscriptionID: "q", subscriptionType: "query", recordType: "CD_CareEvent",
                                                                          predicate: "CD_value > 200")])
        #expect(saved.map(\.subscriptionID) == ["q"])
        #expect(try await olivia.subscriptions().contains { $0.subscriptionID == "q" && $0.predicate == "CD_value > 200" })
        #expect(try await olivia.deleteSubscriptions(["q"]) == ["q"])
        #expect(try await olivia.subscriptions().allSatisfy { $0.subscriptionID != "q" })
    }
}
