/// One participant of a share, as the owner and participants see it.
public struct ShareParticipant: Codable, Sendable, Hashable {
    public var userRecordName: String
    public var role: ShareRole
    public var permission: SharePermission
    public var acceptanceStatus: ShareAcceptanceStatus

    public init(userRecordName: String, role: ShareRole, permission: SharePermission, acceptanceStatus: ShareAcceptanceStatus) {
        self.userRecordName = userRecordName
        self.role = role
        self.permission = permission
        self.acceptanceStatus = acceptanceStatus
    }
}

/// Server-maintained part of a `cloudkit.share` record.
public struct ShareInfo: Codable, Sendable, Hashable {
    public var owner: String
    public var publicPermission: SharePermission
    public var rootRecordName: String?
    public var participants: [ShareParticipant]

    public init(owner: String, publicPermission: SharePermission, rootRecordName: String?, participants: [ShareParticipant]) {
        self.owner = owner
        self.publicPermission = publicPermission
        self.rootRecordName = rootRecordName
        self.participants = participants
    }
}
