import Foundation
import MeowWire
import TestSupport
import Testing

extension KillWorkload {
    /// Every device syncs twice round; then each holds its view of the model exactly, the cloud
    /// holds every object once and each trip's graph in one zone, and the shares are as last
    /// acknowledged.
    func settleAndCheck() async throws {
        current = "settle"
        for device in KillWorkloadHarness.devices + KillWorkloadHarness.devices { try await sync(device) }
        for device in KillWorkloadHarness.devices {
            let (objects, _, duplicates) = try await snapshot(device)
            #expect(duplicates.isEmpty, "\(tag): \(device) holds ids twice: \(duplicates)")
            #expect(comparable(objects, on: device) == view(model, on: device),
                    "\(tag): \(device) differs from the acknowledged operations: \(difference(comparable(objects, on: device), view(model, on: device)))")
            if device == "P" {
                for (id, object) in objects where object.entity == .Tag {
                    #expect(model.objects[id] == object, "\(tag): P holds tag \(id) as \(object), the model \(String(describing: model.objects[id]))")
                }
            }
        }
        var zoneOf: [String: String] = [:]
        var seen: [String: Int] = [:]
        for (zone, records) in try await inspect("the owner's records", { try await harness.ownerRecords() }) {
            for record in records where record["recordType"]?.stringValue?.hasPrefix("CD_") == true {
                guard let id = record["fields"]?["CD_id"]?["value"]?.stringValue else { continue }
                seen[id, default: 0] += 1
                zoneOf[id] = zone
            }
        }
        #expect(seen.filter { $0.value > 1 }.isEmpty, "\(tag): the cloud holds ids twice: \(seen.filter { $0.value > 1 })")
        #expect(Set(seen.keys) == Set(model.objects.keys),
                "\(tag): the cloud holds \(Set(seen.keys).subtracting(model.objects.keys).sorted()) the model has not, lacks \(Set(model.objects.keys).subtracting(seen.keys).sorted())")
        for id in model.objects.keys where model.objects[id]?.entity != .Tag {
            #expect(zoneOf[id] == zoneOf[model.trip(of: id) ?? ""], "\(tag): \(id) is in zone \(zoneOf[id] ?? "none"), its trip in \(zoneOf[model.trip(of: id) ?? ""] ?? "none")")
        }
        let owned = try await inspect("shares.owned", { try await harness.ownedShares() })
        let listed = Dictionary((try await harness.call("P", "share.list")["shares"]?.arrayValue ?? []).compactMap { share in
            share["zoneName"]?.stringValue.map { ($0, share["permission"]?.stringValue ?? "") }
        }, uniquingKeysWith: { first, _ in first })
        for (trip, share) in model.shares {
            #expect(owned[share.zoneName] == share.permission, "\(tag): trip \(trip)'s share gives alice \(owned[share.zoneName] ?? "nothing"), last acknowledged \(share.permission)")
            if share.accepted {
                #expect(listed[share.zoneName] == share.permission, "\(tag): P's metadata for \(share.zoneName) says \(listed[share.zoneName] ?? "nothing"), the share \(share.permission)")
            }
        }
    }
}
