import FoundationEssentials
import CloudWire
import MeowWire
import SQLiteKit

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
                    WHERE zone = ? AND share = ? AND acceptance != '\(ShareAcceptanceStatus.removed.rawValue)' ORDER BY role != '\(ShareRole.owner.rawValue)', user
                    """, [row[0], row[2]]).map { values in
                    let user = values[0].string ?? ""
                    func place(_ column: String) -> String {
                        CloudTransaction.participantRow(zone: row[0].int64 ?? 0, share: row[2].string, user: user, column: column)
                    }
                    return OwnedShare.Participant(user: user, role: try .stored(values[1].string, in: place("role")),
                                                  permission: try .stored(values[2].string, in: place("permission")),
                                                  acceptanceStatus: try .stored(values[3].string, in: place("acceptance")))
                }
                let shareName = row[2].string ?? ""
                return OwnedShare(zoneID: ZoneID(zoneName: row[1].string ?? "", ownerName: caller), shareName: shareName,
                                  rootRecordName: row[3].string,
                                  publicPermission: try .stored(row[4].string, in: CloudTransaction.shareRow(zone: row[0].int64 ?? 0, share: shareName)),
                                  recordCount: row[5].int ?? 0, participants: participants)
            })
        }
    }
}
