import Foundation
import MeowWire
import Testing
import TestSupport

@Suite("A store-service that does not mirror")
struct WithoutMirrorTests {
    /// Without `--sync-socket` the mirror's operations are still served and say why they cannot
    /// run, rather than being unknown; and a client may write as the mirror's author, which a
    /// mirroring device refuses (there is no cloud to contradict).
    @Test func theMirrorsOperationsAnswerMirrorNotConfigured() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        for op in ["sync.status", "sync.send", "sync.fetch", "sync.now", "account.signOut", "share.owned", "share.invitations"] {
            let error = try await client.failure(op, [:])
            #expect(error.code == "mirrorNotConfigured", "\(op): \(error)")
            #expect(error.message.contains("--sync-socket PATH"), "\(op): \(error.message)")
        }
        let opened = try await client.call("context.open", ["author": "sync"])
        #expect(opened["author"] == "sync")
        #expect(try await client.call("ping", ["echo": "still serving"])["echo"] == "still serving")
        _ = await store.stop()
    }
}
