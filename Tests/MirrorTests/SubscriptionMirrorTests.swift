import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// The subscriptions NSPersistentCloudKitContainer saves, and the mirror's fetch on their notifications.
    @Suite("Mirroring: subscriptions", .timeLimit(.minutes(3)))
    struct SubscriptionMirrorTests {
        @Test("An automatic mirror saves Core Data's private and shared database subscriptions and fetches on their notification; one missed is made up by the next fetch")
        func mirrorSubscriptions() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--sync-mode", "automatic"])
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--sync-mode", "automatic"])
            #expect(try await AutomaticModeTests.eventually {
                let userA = try await a.status()["user"], userB = try await b.status()["user"]
                return userA == "owner" && userB == "owner"
            })
            let owner = try await cloud.connect("owner-secret")
            defer { owner.close() }
            let mine = try await owner.call("subscriptions.fetch", ["database": "private"])["subscriptions"]?.arrayValue ?? []
            #expect(mine.map { "\($0["subscriptionID"]?.stringValue ?? "") \($0["subscriptionType"]?.stringValue ?? "")" }
                    == ["com.apple.coredata.cloudkit.private.subscription database"])
            let shared = try await owner.call("subscriptions.fetch", ["database": "shared"])["subscriptions"]?.arrayValue ?? []
            #expect(shared.first?["subscriptionID"] == "com.apple.coredata.cloudkit.shared.subscription")

            // A notification of the private subscription makes B fetch, well before its 5 s look.
            try await a.insertEvents(["pushed"])
            #expect(try await AutomaticModeTests.eventually(4) { try await b.ids() == ["pushed"] })

            // While B's notifications are lost, A's next record still reaches B by its next fetch.
            _ = try await cloud.admin("admin.holdPushes", [:])
            try await a.insertEvents(["missed"])
            #expect(try await AutomaticModeTests.eventually { try await a.status()["quiescent"] == true })
            let released = try await cloud.admin("admin.releasePushes", ["drop": true])
            #expect((released["dropped"]?.intValue ?? 0) >= 1)
            try await b.fetch()
            #expect(try await Set(b.ids()) == ["pushed", "missed"])
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }
    }
}
