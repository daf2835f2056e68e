/// A device's mirror ops (protocol-mirroring.md). Each runs one at a time per device.
///
/// ```swift
/// let now = try await device.sync.now()
/// #expect(now.send.conflictsResolved == 1)
/// ```
public struct DeviceSync: Sendable {
    let connection: TracedConnection

    /// `sync.send`: queues local changes and sends them.
    @discardableResult
    public func send() async throws(MeowCareError) -> SyncSendResult {
        try await connection.call("sync.send", as: SyncSendResult.self)
    }

    /// `sync.fetch`: the private then the shared database's changes.
    @discardableResult
    public func fetch() async throws(MeowCareError) -> SyncFetchResult {
        try await connection.call("sync.fetch", as: SyncFetchResult.self)
    }

    /// `sync.now`: a send, then a fetch.
    @discardableResult
    public func now() async throws(MeowCareError) -> SyncNowResult {
        try await connection.call("sync.now", as: SyncNowResult.self)
    }

    /// `sync.status`: queues, tokens, the running step, the last error; never waits.
    public func status() async throws(MeowCareError) -> SyncStatus {
        try await connection.call("sync.status", as: SyncStatus.self)
    }

    /// `sync.initializeSchema`: `initializeCloudKitSchema`, every field's type defined in the cloud.
    @discardableResult
    public func initializeSchema(dryRun: Bool = false) async throws(MeowCareError) -> SchemaInitialization {
        try await connection.call("sync.initializeSchema", ["dryRun": .bool(dryRun)], as: SchemaInitialization.self)
    }
}

/// A device's share ops: the owner's (`create`, `invite`, `setPermission`, `removeParticipant`,
/// `stop`, `owned`), the participant's (`invitations`, `accept`, `leave`), and the shared
/// store's metadata (`list`, `setMetadata`).
///
/// ```swift
/// let share = try await owner.share.create(session.objectID, participants: [("pablo", .readOnly)])
/// try await participant.share.accept(zoneName: share.zoneName, ownerName: owner.user)
/// ```
public struct DeviceSharing: Sendable {
    let connection: TracedConnection

    /// `share.create`: shares a saved private-store object and its to-many children, inviting `participants`.
    @discardableResult
    public func create(_ objectID: String, participants: [(user: String, permission: SharePermission)] = []) async throws(MeowCareError) -> ShareCreation {
        var params: [String: JSONValue] = ["objectID": .string(objectID)]
        if !participants.isEmpty {
            params["participants"] = .array(participants.map { ["user": .string($0.user), "permission": .string($0.permission.rawValue)] })
        }
        return try await connection.call("share.create", params, as: ShareCreation.self)
    }

    /// `share.invite` (participants.add).
    @discardableResult
    public func invite(_ user: String, permission: SharePermission, zoneName: String) async throws(MeowCareError) -> CloudRecord {
        try await participantOp("share.invite", user: user, permission: permission, zoneName: zoneName)
    }

    /// `share.setPermission` (participants.setPermission; `none` too).
    @discardableResult
    public func setPermission(_ user: String, _ permission: SharePermission, zoneName: String) async throws(MeowCareError) -> CloudRecord {
        try await participantOp("share.setPermission", user: user, permission: permission, zoneName: zoneName)
    }

    /// `share.removeParticipant` (participants.remove).
    @discardableResult
    public func removeParticipant(_ user: String, zoneName: String) async throws(MeowCareError) -> CloudRecord {
        try await participantOp("share.removeParticipant", user: user, permission: nil, zoneName: zoneName)
    }

    private func participantOp(_ op: String, user: String, permission: SharePermission?, zoneName: String) async throws(MeowCareError) -> CloudRecord {
        var params: [String: JSONValue] = ["zoneName": .string(zoneName), "user": .string(user)]
        if let permission { params["permission"] = .string(permission.rawValue) }
        return try await connection.call(op, params, as: ShareResult.self).share
    }

    /// `share.stop`: the owner ends the share (participants lose the zone at their next fetch).
    @discardableResult
    public func stop(zoneName: String) async throws(MeowCareError) -> ModifyResult {
        try await connection.call("share.stop", ["zoneName": .string(zoneName)], as: ModifyResult.self)
    }

    /// `share.owned`: the shares this device's user owns.
    public func owned() async throws(MeowCareError) -> [OwnedShare] {
        try await connection.call("share.owned", as: OwnedSharesResult.self).shares
    }

    /// `share.invitations`: the participations of this device's user.
    public func invitations() async throws(MeowCareError) -> [Invitation] {
        try await connection.call("share.invitations", as: InvitationsResult.self).invitations
    }

    /// `share.accept`: accepts and fetches; the records land in the shared store.
    @discardableResult
    public func accept(zoneName: String, ownerName: String) async throws(MeowCareError) -> ShareAcceptance {
        try await connection.call("share.accept", ["zoneName": .string(zoneName), "ownerName": .string(ownerName)], as: ShareAcceptance.self)
    }

    /// `share.leave`: leaves and removes the zone's data from the shared store.
    @discardableResult
    public func leave(zoneName: String, ownerName: String) async throws(MeowCareError) -> SyncFetchResult {
        try await connection.call("share.leave", ["zoneName": .string(zoneName), "ownerName": .string(ownerName)], as: SyncFetchResult.self)
    }

    /// `share.list`: the shared store's share metadata per zone.
    public func list() async throws(MeowCareError) -> [ShareMetadata] {
        try await connection.call("share.list", as: ShareListResult.self).shares
    }

    /// `share.setMetadata` (only on a device without a mirror: a mirrored device refuses it).
    @discardableResult
    public func setMetadata(zoneName: String, ownerName: String? = nil, permission: SharePermission, objectIDs: [String] = []) async throws(MeowCareError) -> ShareMetadataResult {
        var params: [String: JSONValue] = ["zoneName": .string(zoneName), "permission": .string(permission.rawValue)]
        if let ownerName { params["ownerName"] = .string(ownerName) }
        if !objectIDs.isEmpty { params["objectIDs"] = .array(objectIDs.map { .string($0) }) }
        return try await connection.call("share.setMetadata", params, as: ShareMetadataResult.self)
    }
}

/// `account.signOut` / `account.signIn`: iCloud's sign-out and sign-in on the device.
public struct DeviceAccount: Sendable {
    let connection: TracedConnection

    /// Signs out: the account's data leaves the device (the cloud keeps it). Returns the objects removed.
    @discardableResult
    public func signOut() async throws(MeowCareError) -> Int {
        try await connection.call("account.signOut", as: AccountResult.self).objectsRemoved ?? 0
    }

    /// Signs in (with another user's `credential` to switch accounts); returns the user.
    @discardableResult
    public func signIn(credential: String? = nil) async throws(MeowCareError) -> String {
        try await connection.call("account.signIn", credential.map { ["credential": .string($0)] } ?? [:], as: AccountResult.self).user ?? ""
    }
}
