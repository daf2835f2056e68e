import CloudWire
import MeowWire

/// `share.create`'s params: the root object (a saved private-store object) and the users to
/// invite. Each invitation's permission is kept as sent: share.create checks every one with
/// the cloud before anything is shared, and refuses the request naming the field.
public struct ShareCreateParams: Codable, Sendable, Equatable {
    public var objectID: String
    public var participants: [ParticipantInvite]?

    public init(objectID: String, participants: [ParticipantInvite]? = nil) {
        (self.objectID, self.participants) = (objectID, participants)
    }
}

/// The params of the ops on one share zone: the owner's (`share.invite`, `setPermission`,
/// `removeParticipant`, `stop`: the caller's own zone) and the participant's (`share.accept`,
/// `leave`: `ownerName` names the sharer). The permission is kept as sent, checked by the op.
public struct ShareZoneParams: Codable, Sendable, Hashable {
    public var zoneName: String
    public var ownerName: String?
    public var user: String?
    public var permission: String?

    public init(zoneName: String, ownerName: String? = nil, user: String? = nil, permission: String? = nil) {
        (self.zoneName, self.ownerName, self.user, self.permission) = (zoneName, ownerName, user, permission)
    }
}

/// `share.create`'s answer.
public struct ShareCreation: Codable, Sendable, Hashable {
    /// The new share zone (`com.apple.coredata.cloudkit.share.<UUID>`).
    public var zoneName: String
    public var rootRecordName: String
    /// The root and the members of its graph that are in the share zone.
    public var movedRecords: Int
    /// Members still queued to move (a send error stopped them: they go with the next send).
    public var pendingRecords: Int
    /// The cloud error that stopped the members' move, if one did (the share exists).
    public var sendError: WireError?
    /// The share record (`cloudkit.zoneshare`); null when the server refused even the graph's
    /// leaders in one request, so that the share goes with the send that moves them.
    public var share: CloudRecord?

    public init(zoneName: String, rootRecordName: String, movedRecords: Int, pendingRecords: Int, sendError: WireError?, share: CloudRecord?) {
        (self.zoneName, self.rootRecordName, self.movedRecords, self.pendingRecords) = (zoneName, rootRecordName, movedRecords, pendingRecords)
        (self.sendError, self.share) = (sendError, share)
    }

    private enum CodingKeys: String, CodingKey { case zoneName, rootRecordName, movedRecords, pendingRecords, sendError, share }

    /// Every answer has `share`: null says the share record did not go with the graph's first move.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(zoneName, forKey: .zoneName)
        try container.encode(rootRecordName, forKey: .rootRecordName)
        try container.encode(movedRecords, forKey: .movedRecords)
        try container.encode(pendingRecords, forKey: .pendingRecords)
        try container.encodeIfPresent(sendError, forKey: .sendError)
        try container.encode(share, forKey: .share)
    }
}

/// `share.accept`'s answer: the share, and the fetch that brought its records.
public struct ShareAcceptance: Codable, Sendable, Hashable {
    public var zoneName: String
    public var ownerName: String
    public var share: CloudRecord
    public var fetch: SyncFetchResult

    public init(zoneName: String, ownerName: String, share: CloudRecord, fetch: SyncFetchResult) {
        (self.zoneName, self.ownerName, self.share, self.fetch) = (zoneName, ownerName, share, fetch)
    }
}
