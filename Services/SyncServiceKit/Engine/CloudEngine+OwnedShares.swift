import FoundationEssentials
import CloudWire
import MeowWire
import SQLiteKit

/// One share the caller owns, with every participant it has not removed.
public struct OwnedShare: Codable, Sendable {
    public struct Participant: Codable, Sendable {
        public var user: String
        public var role: String
        public var permission: String
        public var acceptanceStatus: String
    }
    public var zoneID: ZoneID
    public var shareName: String
    public var rootRecordName: String?
    public var publicPermission: String
    /// Records in the share's zone (what a participant who accepts receives).
    public var recordCount: Int
    public var participants: [Participant]
}

public struct OwnedSharesResult: Codable, Sendable {
    public var shares: [OwnedShare]
}

extension CloudEngine {
    /// shares.owned: the caller's live shares in their private database, ordered by zone.
    public func ownedShares(caller: String) throws -> OwnedSharesResult {
        try read { state in
            let shares = try state.db.query("""
                SELECT z.id, z.name, s.name, s.root, s.public_permission,
                    (SELECT count(*) FROM records c WHERE c.zone = z.id AND c.deleted = 0 AND c.type != ?)
                FROM shares s JOIN zones z ON z.id = s.zone
                JOIN records r ON r.zone = s.zone AND r.name = s.name AND r.deleted = 0
                WHERE z.environment = ? AND z.owner = ? ORDER BY z.name, s.name
                """, [CloudKitNames.shareRecordType, state.environment.rawValue, caller])
            return OwnedSharesResult(shares: try shares.map { row in
                let participants = try state.db.query("""
                    SELECT user, role, permission, acceptance FROM participants
                    WHERE zone = ? AND share = ? AND acceptance != 'removed' ORDER BY role != 'owner', user
                    """, [row[0], row[2]]).map {
                    OwnedShare.Participant(user: $0[0].string ?? "", role: $0[1].string ?? "", permission: $0[2].string ?? "",
                                           acceptanceStatus: $0[3].string ?? "")
                }
                return OwnedShare(zoneID: ZoneID(zoneName: row[1].string ?? "", ownerName: caller), shareName: row[2].string ?? "",
                                  rootRecordName: row[3].string, publicPermission: row[4].string ?? "none",
                                  recordCount: row[5].int ?? 0, participants: participants)
            })
        }
    }
}
