import MeowWire
import Testing
import TestSupport

@Suite("Share permissions outside CloudKit's set")
struct SharePermissionInputTests {
    /// A snapshot's share metadata is read back as a permission: a spelling CloudKit does not
    /// have is refused at the import, never kept and read as none.
    @Test func aSnapshotWithAnUnknownSharePermissionIsRefusedAndChangesNothing() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let zone = "com.apple.coredata.cloudkit.share.Z1"
        try await client.call("share.setMetadata", ["zoneName": .string(zone), "ownerName": "owner", "permission": "readOnly"])
        let exported = try #require(try await client.call("snapshot.export")["snapshot"])

        let edited = SnapshotEditing.settingSharePermission(exported, to: "admin")
        let refused = try await client.failure("snapshot.import", ["snapshot": edited])
        #expect(refused.code == .invalidField)
        #expect(refused.message.contains("'admin'") || refused.message.contains("\"admin\""), "\(refused.message)")
        #expect(refused.message.contains("none, readOnly, readWrite"), "\(refused.message)")
        #expect(refused.details["field"] == "params.snapshot.stores")
        let shares = try await client.call("share.list")["shares"]
        #expect(shares == [["zoneName": .string(zone), "ownerName": "owner", "permission": "readOnly"]], "the refused import changed nothing")

        // The same request with a permission CloudKit has goes through.
        _ = try await client.call("snapshot.import", ["snapshot": SnapshotEditing.settingSharePermission(exported, to: "readWrite")])
        #expect(try await client.call("share.list")["shares"]?[0]?["permission"] == "readWrite")
        client.close()
        _ = await store.stop()
    }

    @Test func shareSetMetadataNamesThePermissionsItTakes() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let refused = try await client.failure("share.setMetadata", ["zoneName": "com.apple.coredata.cloudkit.share.Z1", "permission": "owner"])
        #expect(refused.code == .invalidField)
        #expect(refused.message.contains("'owner' is not a share permission; use one of none, readOnly, readWrite."), "\(refused.message)")
        #expect(try await client.call("share.list")["shares"] == [])
        client.close()
        _ = await store.stop()
    }
}
