import CloudWire
import MeowWire
import FoundationEssentials
import SQLiteKit

/// subscriptions.save / fetch / delete: the caller's subscriptions in one database of this
/// engine's environment. Each request is one transaction; a bad subscription refuses the whole
/// request and changes nothing.
extension CloudEngine {
    static let subscriptionTypes = ["database", "recordZone", "query"]
    static let firesOnOptions = ["recordCreation", "recordUpdate", "recordDeletion"]
    /// The most subscriptions one user keeps in one database of one environment.
    static let maxSubscriptions = 100
    /// The most bytes of a subscription's notificationInfo (compact JSON): what a push's payload
    /// holds at most, so one subscription cannot grow the cloud's file without bound.
    static let maxNotificationInfoBytes = 4096

    public func saveSubscriptions(caller: String, _ params: SaveSubscriptionsParams, trace: RequestTrace) throws -> SubscriptionsResult {
        try requireSubscriptionDatabase(params.database)
        guard !params.subscriptions.isEmpty else { throw WireError(.invalidArguments, "subscriptions.save needs at least one subscription in params.subscriptions.") }
        let checked = try params.subscriptions.map { try checkedSubscription($0, caller: caller, database: params.database) }
        let ids = checked.map(\.subscriptionID)
        if let repeated = ids.first(where: { id in ids.filter { $0 == id }.count > 1 }) {
            throw WireError(.invalidArguments, "Subscription '\(repeated)' appears twice in one subscriptions.save.", details: ["subscriptionID": .string(repeated)])
        }
        return try write { state in
            for subscription in checked {
                try state.db.execute("""
                    INSERT INTO subscriptions(environment, user, database, id, body, created) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(environment, user, database, id) DO UPDATE SET body = excluded.body
                    """, [state.environment.rawValue, caller, params.database.rawValue, subscription.subscriptionID,
                          try state.subscriptionText(subscription), state.now])
            }
            let count = try state.db.scalar("SELECT count(*) FROM subscriptions WHERE environment = ? AND user = ? AND database = ?",
                                             [state.environment.rawValue, caller, params.database.rawValue])?.int ?? 0
            guard count <= Self.maxSubscriptions else {
                throw WireError(.quotaExceeded, "A user keeps at most \(Self.maxSubscriptions) subscriptions per database; delete some first.",
                                details: ["limit": .int(Self.maxSubscriptions)])
            }
            return SubscriptionsResult(subscriptions: checked)
        }
    }

    public func fetchSubscriptions(caller: String, _ params: SubscriptionIDsParams, trace: RequestTrace) throws -> SubscriptionsResult {
        try requireSubscriptionDatabase(params.database)
        return try read { state in
            let all = try state.subscriptions(user: caller, database: params.database)
            guard let ids = params.subscriptionIDs else { return SubscriptionsResult(subscriptions: all) }
            let missing = ids.filter { id in !all.contains { $0.subscriptionID == id } }
            guard missing.isEmpty else { throw Self.unknownSubscriptions(missing) }
            return SubscriptionsResult(subscriptions: ids.compactMap { id in all.first { $0.subscriptionID == id } })
        }
    }

    public func deleteSubscriptions(caller: String, _ params: SubscriptionIDsParams, trace: RequestTrace) throws -> DeletedSubscriptionsResult {
        try requireSubscriptionDatabase(params.database)
        guard let ids = params.subscriptionIDs, !ids.isEmpty else {
            throw WireError(.invalidArguments, "subscriptions.delete needs the IDs to delete in params.subscriptionIDs.")
        }
        return try write { state in
            let existing = Set(try state.subscriptions(user: caller, database: params.database).map(\.subscriptionID))
            let missing = ids.filter { !existing.contains($0) }
            guard missing.isEmpty else { throw Self.unknownSubscriptions(missing) }
            for id in ids {
                try state.db.execute("DELETE FROM subscriptions WHERE environment = ? AND user = ? AND database = ? AND id = ?",
                                     [state.environment.rawValue, caller, params.database.rawValue, id])
            }
            return DeletedSubscriptionsResult(deleted: ids)
        }
    }

    static func unknownSubscriptions(_ ids: [String]) -> WireError {
        WireError(.unknownItem, "No subscription \(ids.map { "'\($0)'" }.joined(separator: ", ")) in this database; nothing was changed.",
                  details: ["subscriptionIDs": .array(ids.map { .string($0) })])
    }

    func requireSubscriptionDatabase(_ database: DatabaseScope) throws {
        guard database == .private || database == .shared else {
            throw WireError(.invalidArguments, "Subscriptions live in the private or shared database; this cloud has no \(database.rawValue) database.")
        }
    }

    /// The subscription as stored: its type, zone, predicate and options checked, a zone's
    /// `__defaultOwner__` resolved to the caller. CloudKit's shared database takes database
    /// subscriptions only.
    func checkedSubscription(_ given: CloudSubscription, caller: String, database: DatabaseScope) throws -> CloudSubscription {
        var subscription = given
        let id = given.subscriptionID
        func refuse(_ message: String) -> WireError {
            WireError(.invalidArguments, "Subscription '\(id)': \(message). Nothing was saved.", details: ["subscriptionID": .string(id)])
        }
        guard !id.isEmpty, id.utf8.count <= CloudKitNames.longest else { throw refuse("an ID has 1 to \(CloudKitNames.longest) characters") }
        guard Self.subscriptionTypes.contains(given.subscriptionType) else {
            throw refuse("unknown subscriptionType '\(given.subscriptionType)'; use database, recordZone or query")
        }
        if database == .shared, given.subscriptionType != "database" {
            throw refuse("the shared database takes database subscriptions only (CKDatabaseSubscription)")
        }
        if let options = given.firesOn {
            guard given.subscriptionType == "query" else { throw refuse("firesOn belongs to query subscriptions") }
            guard !options.isEmpty, options.allSatisfy(Self.firesOnOptions.contains) else {
                throw refuse("firesOn takes one or more of recordCreation, recordUpdate, recordDeletion")
            }
        }
        if let info = given.notificationInfo {
            guard info.objectValue != nil else { throw refuse("notificationInfo must be an object") }
            let bytes = JSONWriter.text(info).utf8.count
            guard bytes <= Self.maxNotificationInfoBytes else {
                throw WireError(.limitExceeded, "Subscription '\(id)': notificationInfo is \(bytes) bytes of JSON; at most \(Self.maxNotificationInfoBytes) (a push's payload). Nothing was saved.",
                                details: ["subscriptionID": .string(id), "limit": .int(Self.maxNotificationInfoBytes), "bytes": .int(bytes)])
            }
        }
        switch given.subscriptionType {
        case "database":
            guard given.zoneID == nil, given.recordType == nil, given.predicate == nil else {
                throw refuse("a database subscription takes no zoneID, recordType or predicate")
            }
        case "recordZone":
            guard given.zoneID != nil else { throw refuse("a recordZone subscription needs zoneID") }
            guard given.predicate == nil else { throw refuse("a recordZone subscription takes no predicate") }
        default:
            guard let recordType = given.recordType, !recordType.isEmpty else { throw refuse("a query subscription needs recordType") }
            do { _ = try SubscriptionPredicate.parse(given.predicate ?? "") } catch let error as WireError {
                throw WireError(error.code, "Subscription '\(id)': \(error.message) Nothing was saved.",
                                details: error.details.merging(["subscriptionID": .string(id)]) { _, new in new })
            }
        }
        if var zoneID = given.zoneID {
            if zoneID.ownerName == ZoneID.defaultOwner { zoneID.ownerName = caller }
            guard zoneID.ownerName == caller else { throw refuse("a private database subscription names one of the caller's own zones") }
            subscription.zoneID = zoneID
        }
        return subscription
    }
}

extension CloudEngine {
    /// A snapshot's subscription row: a known environment and database, and a body that is a
    /// subscription with the row's ID (a fetch decodes it again and must not fail).
    static func checkSubscriptionRow(_ values: [SQLValue], row: Int, state: CloudTransaction) throws {
        func refuse(_ what: String) -> WireError {
            WireError(.invalidArguments, "Table subscriptions, row \(row): \(what).", details: ["table": "subscriptions", "row": .int(row)])
        }
        guard case let .text(environment) = values[0], CloudEnvironment(rawValue: environment) != nil else { throw refuse("environment is not development or production") }
        guard case let .text(database) = values[2], ["private", "shared"].contains(database) else { throw refuse("database is not private or shared") }
        guard case let .text(id) = values[3], case let .text(body) = values[4],
              let subscription = try? state.decoder.decode(CloudSubscription.self, from: Array(body.utf8)), subscription.subscriptionID == id,
              CloudEngine.subscriptionTypes.contains(subscription.subscriptionType) else {
            throw refuse("body is not a subscription (JSON text) with the row's ID")
        }
        if subscription.subscriptionType == "query" { _ = try SubscriptionPredicate.parse(subscription.predicate ?? "") }
    }
}
