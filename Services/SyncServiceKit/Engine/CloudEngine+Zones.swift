import CloudWire
import MeowWire
import SQLiteKit

extension CloudEngine {
    /// zones.save: creates custom zones in the caller's private database (saving an existing zone changes nothing).
    public func saveZones(caller: String, _ params: ZonesParams, trace: RequestTrace? = nil) throws -> ZonesResult {
        guard params.database == .private else {
            throw WireError(.permissionFailure, "Zones are created in the private database; the shared database only shows zones others shared.")
        }
        let ids = params.zoneIDs ?? []
        return try locks.withZones(ids.map { $0.resolved(caller: caller) }) { try write { state in
            var saved: [ZoneInfo] = []
            for requested in ids {
                let zoneID = requested.resolved(caller: caller)
                trace?.noteZone(zoneID)
                guard zoneID.ownerName == caller else {
                    throw WireError(.permissionFailure, "PrivateDB can't be used to access another user's zone (\(zoneID.zoneName) of \(zoneID.ownerName)).")
                }
                guard !zoneID.zoneName.isEmpty else { throw WireError(.invalidArguments, "A zone needs a non-empty zoneName.") }
                if let problem = CloudKitNames.problem(zoneName: zoneID.zoneName) {
                    throw WireError(.invalidArguments, "Zone \(CloudKitNames.quoted(zoneID.zoneName)): \(problem).")
                }
                let count = try state.db.scalar("SELECT count(*) FROM zones WHERE environment = ? AND owner = ?", [state.environment.rawValue, caller])?.int ?? 0
                let (zone, created) = try state.ensureZone(owner: caller, name: zoneID.zoneName)
                if created {
                    guard count < state.limits.maxZonesPerUser else {
                        throw WireError(.quotaExceeded, "\(caller) already has \(count) zones; the limit is \(state.limits.maxZonesPerUser).",
                                        details: ["maxZones": .int(state.limits.maxZonesPerUser)])
                    }
                    try state.touchZone(zone)
                }
                saved.append(try state.zoneInfo(zone, caller: caller))
            }
            return ZonesResult(zones: saved)
        } }
    }

    /// zones.fetch: the listed zones (each must exist and be reachable), or every zone of the database.
    public func fetchZones(caller: String, _ params: ZonesParams, trace: RequestTrace? = nil) throws -> ZonesResult {
        try read { state in
            if let ids = params.zoneIDs {
                var zones: [ZoneInfo] = []
                var errors: [String: JSONValue] = [:]
                for id in ids {
                    do {
                        let zone = try state.openZone(id, scope: params.database, caller: caller, trace: trace)
                        zones.append(try state.zoneInfo(zone, caller: caller))
                    } catch let error as WireError {
                        errors[id.zoneName] = try JSONValue(encoding: error)
                    }
                }
                if !errors.isEmpty {
                    throw WireError(.partialFailure, "\(errors.count) of \(ids.count) zones could not be fetched.",
                                    details: ["partialErrors": .object(errors), "zones": try JSONValue(encoding: zones)])
                }
                return ZonesResult(zones: zones)
            }
            let rows: [Row]
            switch params.database {
            case .private:
                rows = try state.db.query("SELECT id, owner, name, horizon FROM zones WHERE environment = ? AND owner = ? ORDER BY name",
                                          [state.environment.rawValue, caller])
            case .shared:
                rows = try state.db.query("""
                    SELECT DISTINCT z.id, z.owner, z.name, z.horizon FROM zones z JOIN participants p ON p.zone = z.id
                    WHERE z.environment = ? AND p.user = ? AND p.acceptance = '\(ShareAcceptanceStatus.accepted.rawValue)' AND z.owner != ? ORDER BY z.owner, z.name
                    """, [state.environment.rawValue, caller, caller])
            }
            return ZonesResult(zones: try rows.map { try state.zoneInfo(CloudTransaction.zoneRow($0), caller: caller) })
        }
    }

    /// zones.delete: removes zones of the caller's private database with their records and
    /// shares; participants see the zone deleted from their shared database.
    public func deleteZones(caller: String, _ params: ZonesParams, trace: RequestTrace? = nil) throws -> ZonesResult {
        guard params.database == .private else {
            throw WireError(.permissionFailure, "Only the owner deletes a zone, through the private database; a participant leaves the share instead.")
        }
        let ids = params.zoneIDs ?? []
        return try locks.withZones(ids.map { $0.resolved(caller: caller) }) { try write { state in
            var deleted: [ZoneID] = []
            for id in ids {
                let zone = try state.openZone(id, scope: .private, caller: caller, trace: trace)
                guard !zone.isDefaultZone else {
                    throw WireError(.invalidArguments, "The default zone cannot be deleted.", details: ["zoneID": state.zoneJSON(id)])
                }
                // Its shares end with it: nobody reads their records any more.
                for share in try state.db.query("SELECT name FROM shares WHERE zone = ? ORDER BY name", [zone.id]).compactMap({ $0[0].string }) {
                    trace?.noteShare("stopped", share: share, zone: zone.zoneID, participants: [])
                }
                try state.removeZone(zone, kind: params.purge == true ? "purged" : "deleted")
                deleted.append(id)
            }
            return ZonesResult(zones: [], deleted: deleted)
        } }
    }
}

extension CloudTransaction {
    func zoneInfo(_ zone: ZoneRow, caller: String) throws -> ZoneInfo {
        let hasZoneShare = try db.scalar("SELECT 1 FROM shares WHERE zone = ? AND name = ?", [zone.id, CloudKitNames.zoneShareName]) != nil
        return ZoneInfo(zoneID: zone.zoneID.presented(to: caller),
                        capabilities: zone.isDefaultZone ? [] : ["atomic", "fetchChanges", "sharing"],
                        zoneShare: hasZoneShare ? CloudKitNames.zoneShareName : nil)
    }

    /// Deletes a zone and everything in it; logs `kind` (deleted or purged) for everyone who saw it.
    func removeZone(_ zone: ZoneRow, kind: String) throws {
        try touchZone(zone, kind: kind)
        for table in ["records", "record_versions", "shares", "participants"] {
            try db.execute("DELETE FROM \(table) WHERE zone = ?", [zone.id])
        }
        try db.execute("DELETE FROM zones WHERE id = ?", [zone.id])
    }
}
