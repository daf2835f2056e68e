/// The cluster's cloud (its sync-service): the admin's connection, and connections acting as
/// any of its users, to see what the server holds or to write as another client would.
///
/// ```swift
/// let records = try await cluster.cloud.user("olivia").records(in: .coreData)
/// try await cluster.cloud.admin.injectFault(CloudFault(code: "serviceUnavailable", op: "records.modify", retryAfterSeconds: 5))
/// ```
public final class MeowCloud: Sendable {
    public let socketPath: String
    /// The admin's connection (faults, holds, clock, reset, snapshots, the request log).
    public let admin: MeowCloudAdmin
    /// Every user's credential (what a device's `--sync-credential` would be).
    public let credentials: [String: String]
    /// The admin credential (for `meowctl --credential` while watching a test).
    public let adminCredential: String
    let lifecycle: ClusterLifecycle

    init(socketPath: String, admin: MeowCloudAdmin, credentials: [String: String], adminCredential: String, lifecycle: ClusterLifecycle) {
        self.socketPath = socketPath
        self.admin = admin
        self.credentials = credentials
        self.adminCredential = adminCredential
        self.lifecycle = lifecycle
    }

    /// A new connection acting as `name` (one of the cluster's users).
    public func user(_ name: String) async throws(MeowCareError) -> MeowCloudUser {
        guard let credential = credentials[name] else {
            throw MeowCareError(.invalidConfiguration, "The cloud has no user '\(name)' the cluster made; its users: \(credentials.keys.sorted().joined(separator: ", ")).",
                                service: "cloud")
        }
        return try await connect(credential: credential, label: "cloud:\(name)")
    }

    /// A new connection with any credential (another user's, or a wrong one to see the refusal).
    public func connect(credential: String?, label: String = "cloud:client") async throws(MeowCareError) -> MeowCloudUser {
        MeowCloudUser(connection: try await TracedConnection.open(socket: socketPath, service: "cloud", label: label, credential: credential,
                                                                   lifecycle: lifecycle))
    }
}

/// A connection to the cloud acting as one user: CloudKit's database ops on CloudWire's types
/// (protocol-sync-service.md).
public struct MeowCloudUser: Sendable {
    let connection: TracedConnection

    /// Any op, its params and result as JSON.
    @discardableResult
    public func call(_ op: String, _ params: [String: JSONValue] = [:]) async throws(MeowCareError) -> JSONValue {
        try await connection.call(op, params)
    }

    private func call<P: Encodable, R: Decodable>(_ op: String, encoding params: P, as type: R.Type) async throws(MeowCareError) -> R {
        let json: JSONValue
        do { json = try JSONValue(encoding: params) } catch {
            throw MeowCareError(.invalidArguments, "Could not encode the params of \(op): \(error)", op: op, service: "cloud")
        }
        return try await connection.call(op, json.objectValue ?? [:], as: type)
    }

    // MARK: Zones

    /// `zones.save` (private database): creates custom zones.
    @discardableResult
    public func saveZones(_ zoneIDs: [ZoneID]) async throws(MeowCareError) -> [ZoneInfo] {
        try await call("zones.save", encoding: ZonesParams(database: .private, zoneIDs: zoneIDs), as: ZonesResult.self).zones
    }

    /// `zones.fetch`: every zone of the database, or those named.
    public func zones(_ database: DatabaseScope = .private, _ zoneIDs: [ZoneID]? = nil) async throws(MeowCareError) -> [ZoneInfo] {
        try await call("zones.fetch", encoding: ZonesParams(database: database, zoneIDs: zoneIDs), as: ZonesResult.self).zones
    }

    /// `zones.delete` (private database), purged or not.
    @discardableResult
    public func deleteZones(_ zoneIDs: [ZoneID], purge: Bool = false) async throws(MeowCareError) -> [ZoneID] {
        try await call("zones.delete", encoding: ZonesParams(database: .private, zoneIDs: zoneIDs, purge: purge), as: ZonesResult.self).deleted ?? []
    }

    // MARK: Records

    /// `records.modify`. A per-item failure throws `partialFailure` with `partialErrors`
    /// (a `serverRecordChanged` carries its records: `error.conflict`).
    @discardableResult
    public func modify(_ database: DatabaseScope = .private, saving saves: [CloudRecord] = [], deleting deletes: [RecordID] = [],
                       savePolicy: SavePolicy? = nil, atomic: Bool? = nil) async throws(MeowCareError) -> ModifyResult {
        let params = ModifyParams(database: database, saves: saves.isEmpty ? nil : saves,
                                  deletes: deletes.isEmpty ? nil : deletes.map { DeleteItem(recordName: $0.recordName, zoneID: $0.zoneID) },
                                  savePolicy: savePolicy, atomic: atomic)
        return try await call("records.modify", encoding: params, as: ModifyResult.self)
    }

    /// `records.fetch`.
    public func fetchRecords(_ database: DatabaseScope = .private, _ recordIDs: [RecordID]) async throws(MeowCareError) -> [CloudRecord] {
        try await call("records.fetch", encoding: FetchRecordsParams(database: database, recordIDs: recordIDs), as: FetchRecordsResult.self).records
    }

    /// `changes.fetchZone`: one page of a zone's changes since `token`.
    public func zoneChanges(_ database: DatabaseScope = .private, zone: ZoneID, since token: String? = nil,
                            limit: Int? = nil) async throws(MeowCareError) -> FetchZoneChangesResult {
        let params = FetchZoneChangesParams(database: database, zoneID: zone, since: token, limit: limit)
        let json: JSONValue
        do { json = try JSONValue(encoding: params) } catch {
            throw MeowCareError(.invalidArguments, "Could not encode the params of changes.fetchZone: \(error)", op: "changes.fetchZone", service: "cloud")
        }
        return FetchZoneChangesResult(tree: try await connection.call("changes.fetchZone", json.objectValue ?? [:]))
    }

    /// `changes.fetchDatabase`: one page of the database's zone changes since `token`.
    public func databaseChanges(_ database: DatabaseScope = .private, since token: String? = nil) async throws(MeowCareError) -> FetchDatabaseChangesResult {
        var params: [String: JSONValue] = ["database": .string(database.rawValue)]
        if let token { params["since"] = .string(token) }
        return FetchDatabaseChangesResult(tree: try await connection.call("changes.fetchDatabase", params))
    }

    /// Every live record of a zone (its changes from the start, page after page).
    public func records(in zone: ZoneID, _ database: DatabaseScope = .private) async throws(MeowCareError) -> [CloudRecord] {
        var records: [CloudRecord] = []
        var token: String?
        while true {
            let page = try await zoneChanges(database, zone: zone, since: token, limit: 1000)
            records += page.changed
            guard page.moreComing else { return records }
            token = page.token
        }
    }

    // MARK: Shares and participants

    /// `shares.invitations`: this user's participations.
    public func invitations() async throws(MeowCareError) -> [Invitation] {
        try await connection.call("shares.invitations", as: InvitationsResult.self).invitations
    }

    /// `shares.owned`: the shares this user owns.
    public func ownedShares() async throws(MeowCareError) -> [OwnedShare] {
        try await connection.call("shares.owned", as: OwnedSharesResult.self).shares
    }

    /// `shares.accept` (the zone with its owner's name).
    @discardableResult
    public func acceptShare(in zone: ZoneID, shareName: String? = nil) async throws(MeowCareError) -> CloudRecord {
        try await shareOp("shares.accept", ShareParams(zoneID: zone, shareName: shareName))
    }

    /// `shares.leave`.
    @discardableResult
    public func leaveShare(in zone: ZoneID, shareName: String? = nil) async throws(MeowCareError) -> CloudRecord {
        try await shareOp("shares.leave", ShareParams(zoneID: zone, shareName: shareName))
    }

    /// `shares.fetch`: the owner from the private database, a participant from the shared one.
    public func fetchShare(in zone: ZoneID, _ database: DatabaseScope = .private, shareName: String? = nil) async throws(MeowCareError) -> CloudRecord {
        try await shareOp("shares.fetch", ShareParams(database: database, zoneID: zone, shareName: shareName))
    }

    /// `shares.setPublicPermission` (owner).
    @discardableResult
    public func setPublicPermission(_ permission: SharePermission, in zone: ZoneID, shareName: String? = nil) async throws(MeowCareError) -> CloudRecord {
        try await shareOp("shares.setPublicPermission", ShareParams(zoneID: zone, shareName: shareName, permission: permission.rawValue))
    }

    /// `participants.add` (owner).
    @discardableResult
    public func addParticipant(_ user: String, _ permission: SharePermission, in zone: ZoneID, shareName: String? = nil) async throws(MeowCareError) -> CloudRecord {
        try await shareOp("participants.add", ShareParams(zoneID: zone, shareName: shareName, user: user, permission: permission.rawValue))
    }

    /// `participants.setPermission` (owner).
    @discardableResult
    public func setParticipantPermission(_ user: String, _ permission: SharePermission, in zone: ZoneID,
                                         shareName: String? = nil) async throws(MeowCareError) -> CloudRecord {
        try await shareOp("participants.setPermission", ShareParams(zoneID: zone, shareName: shareName, user: user, permission: permission.rawValue))
    }

    /// `participants.remove` (owner).
    @discardableResult
    public func removeParticipant(_ user: String, in zone: ZoneID, shareName: String? = nil) async throws(MeowCareError) -> CloudRecord {
        try await shareOp("participants.remove", ShareParams(zoneID: zone, shareName: shareName, user: user))
    }

    private func shareOp(_ op: String, _ params: ShareParams) async throws(MeowCareError) -> CloudRecord {
        try await call(op, encoding: params, as: ShareResult.self).share
    }

    /// `databaseChanged` pushes for this user's databases (from other connections), on this connection.
    public func events() async throws(MeowCareError) -> MeowEvents {
        MeowEvents(try await connection.subscribe(["databaseChanges"]))
    }

    // MARK: Subscriptions

    /// `subscriptions.save`: saves (or replaces) subscriptions of a database.
    @discardableResult
    public func saveSubscriptions(_ subscriptions: [CloudSubscription], in database: DatabaseScope = .private) async throws(MeowCareError) -> [CloudSubscription] {
        try await call("subscriptions.save", encoding: SaveSubscriptionsParams(database: database, subscriptions: subscriptions),
                       as: SubscriptionsResult.self).subscriptions
    }

    /// `subscriptions.fetch`: every subscription of the database, or those named.
    public func subscriptions(_ database: DatabaseScope = .private, _ ids: [String]? = nil) async throws(MeowCareError) -> [CloudSubscription] {
        try await call("subscriptions.fetch", encoding: SubscriptionIDsParams(database: database, subscriptionIDs: ids), as: SubscriptionsResult.self).subscriptions
    }

    /// `subscriptions.delete`: the IDs deleted.
    @discardableResult
    public func deleteSubscriptions(_ ids: [String], in database: DatabaseScope = .private) async throws(MeowCareError) -> [String] {
        try await call("subscriptions.delete", encoding: SubscriptionIDsParams(database: database, subscriptionIDs: ids),
                       as: DeletedSubscriptionsResult.self).deleted
    }

    /// Subscriptions' `notification` events for this user (from other connections), on this connection.
    public func notifications() async throws(MeowCareError) -> MeowEvents {
        MeowEvents(try await connection.subscribe(["notifications"]))
    }
}
