import Foundation
import MeowWire
import TestSupport
import Testing

/// The owner's share operations and the participant's acceptance, each resolved from the cloud
/// when a kill takes its reply.
extension KillWorkload {
    /// One of the owner's share operations, or nil to write instead.
    func shareOperation(_ device: String) -> (() async throws -> Void)? {
        guard Int.random(in: 0..<3, using: &rng) == 0 else { return nil }
        let unshared = model.ids(.Trip).filter { model.shares[$0] == nil }
        let shared = model.shares.keys.sorted()
        let kind = Int.random(in: 0..<4, using: &rng)
        if kind < 2, let trip = unshared.randomElement(using: &rng) {
            let permission = Bool.random(using: &rng) ? "readWrite" : "readOnly"
            return { try await self.shareCreate(device, trip, permission) }
        }
        guard let trip = shared.randomElement(using: &rng) else { return nil }
        if kind == 3 { return { try await self.stop(device, trip) } }
        let permission = model.shares[trip]?.permission == "readWrite" ? "readOnly" : "readWrite"
        return { try await self.setPermission(device, trip, permission) }
    }

    /// The participant has nothing queued before the owner changes what she may do (her device
    /// synced after each of its operations), so a permission change or a stop loses nothing of hers.
    func shareCreate(_ device: String, _ trip: String, _ permission: String) async throws {
        current = "shareCreate"
        let before = Set(try await inspect("shares.owned", { try await harness.ownedShares() }).keys)
        let objectID = try await snapshot(device).objectIDs[trip] ?? ""
        do {
            let zone = try await harness.call(device, "share.create", ["objectID": .string(objectID),
                                                                       "participants": [["user": "alice", "permission": .string(permission)]]])["zoneName"]?.stringValue
            model.shares[trip] = .init(zoneName: zone ?? "", permission: permission)
            model.everShared.insert(trip)
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            // The share exists if the trip's record is in a new zone with a share on it.
            let shares = try await inspect("shares.owned", { try await harness.ownedShares() })
            let records = try await inspect("the owner's records", { try await harness.ownerRecords() })
            let zone = shares.keys.filter { !before.contains($0) }.first { zone in
                records[zone]?.contains { $0["recordType"] == "CD_Trip" && $0["fields"]?["CD_id"]?["value"]?.stringValue == trip } == true
            }
            if let zone {
                unknownApplied += 1
                var granted = shares[zone] ?? ""
                if granted.isEmpty {
                    // Made before its participant was invited: the app invites again.
                    try await retrying("share.invite") { try await harness.call(device, "share.invite", ["zoneName": .string(zone), "user": "alice", "permission": .string(permission)]) }
                    granted = permission
                }
                model.shares[trip] = .init(zoneName: zone, permission: granted)
                model.everShared.insert(trip)
            }
        }
        current = "sync after shareCreate"
        try await sync(device)
    }

    func accept(_ trip: String) async throws {
        current = "accept"
        guard let zone = model.shares[trip]?.zoneName else { return }
        do {
            try await harness.call("P", "share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            model.shares[trip]?.accepted = true
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            if try await inspect("alice's invitations", { try await harness.acceptedByAlice() }).contains(zone) {
                model.shares[trip]?.accepted = true
                unknownApplied += 1
            }
        }
        current = "sync after accept"
        try await sync("P")
    }

    func setPermission(_ device: String, _ trip: String, _ permission: String) async throws {
        current = "setPermission"
        guard let zone = model.shares[trip]?.zoneName else { return }
        do {
            try await harness.call(device, "share.setPermission", ["zoneName": .string(zone), "user": "alice", "permission": .string(permission)])
            model.shares[trip]?.permission = permission
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            if let now = try await inspect("shares.owned", { try await harness.ownedShares() })[zone], now != model.shares[trip]?.permission {
                model.shares[trip]?.permission = now
                unknownApplied += 1
            }
        }
    }

    func stop(_ device: String, _ trip: String) async throws {
        current = "stopSharing"
        guard let zone = model.shares[trip]?.zoneName else { return }
        do {
            try await harness.call(device, "share.stop", ["zoneName": .string(zone)])
            model.shares[trip] = nil
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            if try await inspect("shares.owned", { try await harness.ownedShares() })[zone] == nil {
                model.shares[trip] = nil
                unknownApplied += 1
            }
        }
    }

}
