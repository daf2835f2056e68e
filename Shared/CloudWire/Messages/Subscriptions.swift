import MeowWire

/// A subscription as CloudKit keeps it on the server, per user, database and environment:
/// `database` (CKDatabaseSubscription: any change in the database), `recordZone`
/// (CKRecordZoneSubscription: changes in one zone, optionally of one record type) or `query`
/// (CKQuerySubscription: records of a type matching a predicate, created, updated or deleted).
public struct CloudSubscription: Codable, Sendable, Hashable {
    public var subscriptionID: String
    /// `database`, `recordZone` or `query`.
    public var subscriptionType: String
    /// The zone of a `recordZone` subscription (required) or of a `query` one (optional: every zone).
    public var zoneID: ZoneID?
    /// A `query` subscription's record type (required); a `recordZone` one's optional filter.
    public var recordType: String?
    /// A `query` subscription's predicate (`SubscriptionPredicate`); absent: `TRUEPREDICATE`.
    public var predicate: String?
    /// A `query` subscription's `recordCreation`, `recordUpdate`, `recordDeletion` (default all three).
    public var firesOn: [String]?
    /// CKSubscription.NotificationInfo, kept and sent back as given (an object).
    public var notificationInfo: JSONValue?

    public init(subscriptionID: String, subscriptionType: String, zoneID: ZoneID? = nil, recordType: String? = nil,
                predicate: String? = nil, firesOn: [String]? = nil, notificationInfo: JSONValue? = nil) {
        self.subscriptionID = subscriptionID
        self.subscriptionType = subscriptionType
        self.zoneID = zoneID
        self.recordType = recordType
        self.predicate = predicate
        self.firesOn = firesOn
        self.notificationInfo = notificationInfo
    }
}

/// subscriptions.save.
public struct SaveSubscriptionsParams: Codable, Sendable {
    public var database: DatabaseScope
    public var subscriptions: [CloudSubscription]
    public init(database: DatabaseScope, subscriptions: [CloudSubscription]) {
        self.database = database
        self.subscriptions = subscriptions
    }
}

/// subscriptions.fetch (every subscription of the database when `subscriptionIDs` is absent) and subscriptions.delete.
public struct SubscriptionIDsParams: Codable, Sendable {
    public var database: DatabaseScope
    public var subscriptionIDs: [String]?
    public init(database: DatabaseScope, subscriptionIDs: [String]? = nil) {
        self.database = database
        self.subscriptionIDs = subscriptionIDs
    }
}

public struct SubscriptionsResult: Codable, Sendable {
    public var subscriptions: [CloudSubscription]
    public init(subscriptions: [CloudSubscription]) { self.subscriptions = subscriptions }
}

public struct DeletedSubscriptionsResult: Codable, Sendable {
    public var deleted: [String]
    public init(deleted: [String]) { self.deleted = deleted }
}

/// A `notification` event (topic `notifications`): a change matched a subscription of the
/// receiving user (CKNotification: CKDatabaseNotification, CKRecordZoneNotification,
/// CKQueryNotification).
public struct SubscriptionNotification: Codable, Sendable, Hashable {
    public var notificationID: String
    public var subscriptionID: String
    /// `database`, `recordZone` or `query`, as the subscription's type.
    public var notificationType: String
    public var database: DatabaseScope
    /// The zone changed (recordZone and query notifications).
    public var zoneID: ZoneID?
    /// A query notification's record and why it fired: `recordCreated`, `recordUpdated`, `recordDeleted`.
    public var recordName: String?
    public var recordType: String?
    public var queryNotificationReason: String?
    public var notificationInfo: JSONValue?
    /// The server's change sequence of the commit.
    public var seq: Int64

    public init(notificationID: String, subscriptionID: String, notificationType: String, database: DatabaseScope, zoneID: ZoneID? = nil,
                recordName: String? = nil, recordType: String? = nil, queryNotificationReason: String? = nil,
                notificationInfo: JSONValue? = nil, seq: Int64) {
        self.notificationID = notificationID
        self.subscriptionID = subscriptionID
        self.notificationType = notificationType
        self.database = database
        self.zoneID = zoneID
        self.recordName = recordName
        self.recordType = recordType
        self.queryNotificationReason = queryNotificationReason
        self.notificationInfo = notificationInfo
        self.seq = seq
    }
}
