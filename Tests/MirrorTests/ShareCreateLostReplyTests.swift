import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// share.create's move committed, its reply lost: the mirror repeats the request, which
    /// meets the copies the first delivery made.
    @Suite("Mirroring: share.create whose move's reply was lost", .timeLimit(.minutes(5)))
    struct ShareCreateLostReplyTests {
        /// Seed 564 of the explorer's correct flow, made exact. A's session was never sent (its
        /// send was deferred an hour by requestRateLimited), so share.create moves it straight
        /// into the new share zone; that request commits and its reply is lost. The repeat finds
        /// the session and the share already there: they are the move's own copies, so
        /// share.create succeeds. A failure (partialFailure) would leave the device counting the
        /// session unshared, and its deferred insert would create a second copy in the
        /// core-data zone.
        @Test("A share.create whose move committed before its reply was lost succeeds, and the graph lives in the share zone only")
        func moveCommittedReplyLost() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let session = try await a.insertSession("mochi")
            _ = try await cloud.admin("admin.injectFault", ["op": "records.modify", "user": "owner", "code": "requestRateLimited",
                                                           "retryAfterSeconds": 3600])
            _ = try? await a.call("sync.send")
            #expect(try await a.pending() == 1, "the insert waits out the retry-after")
            _ = try await cloud.admin("admin.injectFault", ["op": "records.modify", "user": "owner", "recordType": "cloudkit.share",
                                                           "effect": "dropAfterCommit"])
            let zoneName = try await a.share(session)
            // Past the retry-after: whatever is still queued goes now.
            _ = try await a.call("clock.set", ["advanceSeconds": 7200])
            try await a.send()
            try await b.fetch()
            #expect(try await cloud.records(user: "owner").isEmpty, "a second copy of the session was created in the core-data zone")
            let shared = try await cloud.records(user: "owner", zone: ["zoneName": .string(zoneName)])
            #expect(shared.filter { $0["recordType"] == "CD_CareSession" }.count == 1)
            #expect(shared.contains { $0["recordType"] == "cloudkit.share" })
            for device in [a, b] {
                #expect(try await device.objects("CareSession").count == 1, "on \(device.name)")
                #expect(try await device.pending() == 0, "on \(device.name)")
            }
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
