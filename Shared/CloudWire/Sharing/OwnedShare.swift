/// One share the caller owns (`shares.owned`), with every participant it has not removed.
public struct OwnedShare: Codable, Sendable, Hashable {
    public struct Participant: Codable, Sendable, Hashable {
        public var user: String
        public var role: ShareRole
        public var permission: SharePermission
        public var acceptanceStatus: ShareAcceptanceStatus

        public init(user: String, role: ShareRole, permission: SharePermission, acceptanceStatus: ShareAcceptanceStatus) {
            self.user = user
            self.role = role
            self.permission = permission
            self.acceptanceStatus = acceptanceStatus
        }
    }

    public var zoneID: ZoneID
    public var shareName: String
    public var rootRecordName: String?
    public var publicPermission: SharePermission
    /// Records in the share's zone (what a participant who accepts receives).
    public var recordCount: Int
    public var participants: [Participant]

    public init(zoneID: ZoneID, shareName: String, rootRecordName: String?, publicPermission: SharePermission,
                recordCount: Int, participants: [Participant]) {
        self.zoneID = zoneID
        self.shareName = shareName
        self.rootRecordName = rootRecordName
        self.publicPermission = publicPermission
        self.recordCount = recordCount
        self.participants = participants
    }
}

/// `shares.owned`'s result.
public struct OwnedSharesResult: Codable, Sendable {
    public var shares: [OwnedShare]

    public init(shares: [OwnedShare]) {
        self.shares = shares
    }
}
