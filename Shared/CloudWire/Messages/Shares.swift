import MeowWire

/// Params of the share and participant ops: which share (its zone and record name), and for
/// participant ops the user and permission. The permission is kept as sent: each op checks it
/// (`SharePermission.parse`) and refuses one it does not take with invalidArguments naming the field.
public struct ShareParams: Codable, Sendable {
    public var database: DatabaseScope?
    public var zoneID: ZoneID
    public var shareName: String?
    public var user: String?
    public var permission: String?
    public init(database: DatabaseScope? = nil, zoneID: ZoneID, shareName: String? = nil, user: String? = nil, permission: String? = nil) {
        self.database = database
        self.zoneID = zoneID
        self.shareName = shareName
        self.user = user
        self.permission = permission
    }
    /// The share's record name (default: the zone-wide share).
    package var share: String { shareName ?? CloudKitNames.zoneShareName }
}

public struct ShareResult: Codable, Sendable {
    public var share: CloudRecord

    public init(share: CloudRecord) {
        self.share = share
    }
}

public struct Invitation: Codable, Sendable, Hashable {
    public var zoneID: ZoneID
    public var shareName: String
    public var rootRecordName: String?
    public var role: ShareRole
    public var permission: SharePermission
    public var acceptanceStatus: ShareAcceptanceStatus

    public init(zoneID: ZoneID, shareName: String, rootRecordName: String? = nil, role: ShareRole, permission: SharePermission,
                acceptanceStatus: ShareAcceptanceStatus) {
        self.zoneID = zoneID
        self.shareName = shareName
        self.rootRecordName = rootRecordName
        self.role = role
        self.permission = permission
        self.acceptanceStatus = acceptanceStatus
    }
}

public struct InvitationsResult: Codable, Sendable {
    public var invitations: [Invitation]

    public init(invitations: [Invitation]) {
        self.invitations = invitations
    }
}

/// One invitation to a share: a user and the permission they are to have (kept as sent, checked
/// by the op as `ShareParams.permission` is).
public struct ParticipantInvite: Codable, Sendable, Equatable {
    public var user: String
    public var permission: String

    public init(user: String, permission: String) {
        self.user = user
        self.permission = permission
    }
}

/// participants.validate: invitations to check for a new share, before anything is shared.
public struct ParticipantsValidateParams: Codable, Sendable {
    public var participants: [ParticipantInvite]

    public init(participants: [ParticipantInvite]) {
        self.participants = participants
    }
}

public struct ParticipantsValidateResult: Codable, Sendable {
    public var participants: [ParticipantInvite]

    public init(participants: [ParticipantInvite]) {
        self.participants = participants
    }
}
