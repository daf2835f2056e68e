import CloudWire
import FoundationEssentials
import MeowWire
import SQLiteKit

/// A record a request created, updated or deleted, kept for the request's subscription
/// matching (query and record-type-filtered zone subscriptions) until its zone is touched.
struct RecordChange: Sendable {
    var zone: Int64
    var name: String
    var type: String
    /// The record's stored fields text (the last version's, for a deletion).
    var fieldsText: String?
    /// `recordCreated`, `recordUpdated` or `recordDeleted` (CKQueryNotification.Reason).
    var reason: String
    /// Where the record hangs, to tell which share it is in: its own share (a hierarchy's root),
    /// its parent, and its parent before this change (a record moved out of a share).
    var share: String? = nil
    var parent: String? = nil
    var previousParent: String? = nil
}

/// A notification for one user, published after its request commits.
struct SubscriptionNotice: Sendable {
    var user: String
    var environment: CloudEnvironment
    var notification: SubscriptionNotification
}

extension CloudTransaction {
    func subscriptionText(_ subscription: CloudSubscription) throws -> String {
        String(decoding: try encoder.encode(subscription), as: UTF8.self)
    }

    /// The user's subscriptions in `database` of the request's environment, by ID.
    func subscriptions(user: String, database: DatabaseScope) throws -> [CloudSubscription] {
        try db.query("SELECT body FROM subscriptions WHERE environment = ? AND user = ? AND database = ? ORDER BY id",
                     [environment.rawValue, user, database.rawValue]).compactMap { row in
            try row[0].string.map { try decoder.decode(CloudSubscription.self, from: Array($0.utf8)) }
        }
    }

    /// Queues the notifications of `zone`'s change at `seq` for `user`'s subscriptions in
    /// `database`: every database subscription; a zone subscription of the zone (of a record
    /// type the request changed, when it names one); a query subscription per changed record
    /// of its type, reason and predicate. Query and zone subscriptions are the owner's
    /// (private database).
    func notifySubscribers(zone: ZoneRow, user: String, database: DatabaseScope, seq: Int64) throws {
        let subscriptions = try subscriptions(user: user, database: database)
        guard !subscriptions.isEmpty else { return }
        let changes = recordChanges.filter { $0.zone == zone.id }
        let presented = zone.zoneID.presented(to: user)
        func notice(_ subscription: CloudSubscription, zone: ZoneID? = nil, change: RecordChange? = nil) {
            let number = subscriptionNotices.count + 1
            subscriptionNotices.append(SubscriptionNotice(user: user, environment: environment, notification: SubscriptionNotification(
                notificationID: "\(seq)-\(number)", subscriptionID: subscription.subscriptionID, notificationType: subscription.subscriptionType,
                database: database, zoneID: zone, recordName: change?.name, recordType: change?.type, queryNotificationReason: change?.reason,
                notificationInfo: subscription.notificationInfo, seq: seq)))
        }
        for subscription in subscriptions {
            switch subscription.subscriptionType {
            case "database":
                notice(subscription)
            case "recordZone":
                guard subscription.zoneID?.zoneName == zone.name, subscription.zoneID?.ownerName == zone.owner else { continue }
                if let recordType = subscription.recordType, !changes.contains(where: { $0.type == recordType }) { continue }
                notice(subscription, zone: presented)
            default:
                if let zoneID = subscription.zoneID, zoneID.zoneName != zone.name || zoneID.ownerName != zone.owner { continue }
                let predicate = try SubscriptionPredicate.parse(subscription.predicate ?? "")
                let fires = Set(subscription.firesOn ?? CloudEngine.firesOnOptions)
                for change in changes where change.type == subscription.recordType && fires.contains(Self.firesOnOption(change.reason)) {
                    let fields = change.fieldsText.flatMap { (try? JSONParser.parse($0))?.objectValue } ?? [:]
                    if predicate.matches(fields) { notice(subscription, zone: presented, change: change) }
                }
            }
        }
    }

    static func firesOnOption(_ reason: String) -> String {
        switch reason {
        case "recordCreated": return "recordCreation"
        case "recordUpdated": return "recordUpdate"
        default: return "recordDeletion"
        }
    }
}
