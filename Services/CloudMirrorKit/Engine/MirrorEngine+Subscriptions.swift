import CloudWire
import MeowWire
import StoreServiceKit

/// The subscriptions NSPersistentCloudKitContainer keeps in the cloud, and what the mirror does
/// with their notifications: fetch. A notification is a hint; one missed while the device was
/// away is made up by its next fetch, which reads from its change tokens.
extension MirrorEngine {
    static let privateSubscriptionID = "com.apple.coredata.cloudkit.private.subscription"
    static let sharedSubscriptionID = "com.apple.coredata.cloudkit.shared.subscription"

    /// Database subscriptions: the private one covers the owner's share zones as well as the
    /// Core Data zone, since a share's zone lives in its owner's private database.
    static let subscriptions: [(DatabaseScope, CloudSubscription)] = [
        (.private, CloudSubscription(subscriptionID: privateSubscriptionID, subscriptionType: "database",
                                     notificationInfo: ["shouldSendContentAvailable": true])),
        (.shared, CloudSubscription(subscriptionID: sharedSubscriptionID, subscriptionType: "database",
                                    notificationInfo: ["shouldSendContentAvailable": true])),
    ]

    /// Saves the mirror's subscriptions (saving one again replaces it: every device saves the
    /// same) and fetches when a notification names one. A cloud that refuses them (an older
    /// sync-service) still gets the mirror's attention through its `databaseChanged` pushes.
    func listenForChanges(_ client: WireClient) {
        var saved = true
        for (database, subscription) in Self.subscriptions {
            do {
                _ = try client.callBlocking("subscriptions.save", SaveSubscriptionsParams(database: database, subscriptions: [subscription]))
            } catch {
                saved = false
                logger.notice("subscription not saved; listening for databaseChanged instead",
                              ["subscriptionID": .string(subscription.subscriptionID), "code": .string(error.code.rawValue)])
            }
        }
        let topic = saved ? "notifications" : "databaseChanges"
        _ = try? client.callBlocking("subscribe", ["topics": [.string(topic)]] as JSONValue)
        let ours: Set<String> = [Self.privateSubscriptionID, Self.sharedSubscriptionID]
        let events = client.events
        Task.detached { [weak self] in
            for await event in events {
                // A report joins the push to the device's lane from this line.
                self?.logger.info("push received", ["event": .string(event.name), "data": event.data])
                if event.name == "notification", let id = event.data["subscriptionID"]?.stringValue, ours.contains(id) { self?.poke() }
                if event.name == "databaseChanged" { self?.poke() }
            }
        }
    }
}
