import Foundation
import MeowWire

/// Chapters 7b and 8: an offline edit conflict between Olivia's two devices, resolved field by
/// field by the mirror's policy; then every device checked against the cloud.
struct ConvergenceChapters {
    let deployment: Deployment
    let transcript: DemoTranscript

    func tell() async {
        await transcript.run("7b. Devices A and B edit the same reading offline; the cloud merge decides field by field") {
            try await offlineConflict()
        }
        await transcript.run("8. Convergence: every device against the cloud") {
            try await convergence()
        }
    }

    private func offlineConflict() async throws {
        let deviceA = try await Device(deployment, "device-a")
        let deviceB = try await Device(deployment, "device-b")
        defer { deviceA.client.close(); deviceB.client.close() }
        _ = try await deviceA.client.call("sync.now", [:])
        _ = try await deviceB.client.call("sync.now", [:])
        guard let onA = try await deviceA.fetch("CareEvent", predicate: "id == 'bg-19:45'").first?.objectID,
              let onB = try await deviceB.fetch("CareEvent", predicate: "id == 'bg-19:45'").first?.objectID else {
            return transcript.check(false, "both devices have the 19:45 reading")
        }
        let contextA = try await deviceA.openContext()
        _ = try await deviceA.set(contextA, onA, ["value": 150.0, "note": "before dinner"])
        _ = try await deviceA.save(contextA)
        transcript.say("device A (offline): value 143 → 150, note → \"before dinner\"")
        let contextB = try await deviceB.openContext()
        _ = try await deviceB.set(contextB, onB, ["note": "after dinner, re-measured"])
        _ = try await deviceB.save(contextB)
        transcript.say("device B (offline, a moment later): note → \"after dinner, re-measured\"")
        _ = try await deviceA.client.call("sync.send", [:])
        transcript.say("device A sends first; the server takes its version")
        let sentB = try await deviceB.client.call("sync.send", [:])
        transcript.say("device B sends: serverRecordChanged → merged against the ancestor → re-sent: \(MeowCtl.compactJSON(sentB))")
        _ = try await deviceB.client.call("sync.now", [:])
        _ = try await deviceA.client.call("sync.fetch", [:])
        for device in [deviceA, deviceB] {
            let values = try await device.fetch("CareEvent", predicate: "id == 'bg-19:45'").first?.values
            let value = values?["value"]?.doubleValue.map { String(Int($0)) } ?? "nil"
            let note = values?["note"]?.stringValue ?? "nil"
            transcript.say("\(device.name): value = \(value) (only A changed it: A's edit kept), note = \"\(note)\" (both changed it: the later edit, B's, wins)")
            transcript.check(value == "150" && note == "after dinner, re-measured", "\(device.name) holds the merged reading")
        }
    }

    private func convergence() async throws {
        let devices = [("device-a", "olivia", "Private"), ("device-b", "olivia", "Private"), ("device-p", "pablo", "Shared")]
        for _ in 0..<2 {
            for (name, _, _) in devices {
                let device = try await Device(deployment, name)
                _ = try await device.client.call("sync.now", [:])
                device.client.close()
            }
        }
        for (name, user, store) in devices {
            let device = try await Device(deployment, name)
            defer { device.client.close() }
            if store == "Private" {
                let defaults = try await device.count("CareSession", predicate: "isDefault == YES")
                transcript.check(defaults == 1, "\(name) has one default session (each device made one at start-up; they are the same record)")
            }
            transcript.check(try await device.status().quiescent, "\(name) is quiescent (nothing pending, nothing in flight)")
            var local: [String: String] = [:]
            for entity in ["CareSession", "CareEvent"] {
                for object in try await device.fetch(entity, predicate: "TRUEPREDICATE", stores: [store]) {
                    local[object.uuid] = Self.summary(value: object["value"], note: object["note"])
                }
            }
            let cloud = try await cloudRecords(user: user, database: store == "Private" ? "private" : "shared")
            let missing = Set(cloud.keys).subtracting(local.keys).count
            let extra = Set(local.keys).subtracting(cloud.keys).count
            let differing = local.filter { cloud[$0.key] != nil && cloud[$0.key] != $0.value }.count
            transcript.check(missing == 0 && extra == 0 && differing == 0 && !local.isEmpty,
                             "\(name)'s \(store.lowercased()) store matches \(user)'s \(store == "Private" ? "private" : "shared") database: \(local.count) objects, \(missing) missing, \(extra) extra, \(differing) differing")
        }
    }

    /// Every CD_ record of the user's database, by record name, summarised like the local objects.
    private func cloudRecords(user: String, database: String) async throws -> [String: String] {
        let client = try await deployment.connect("sync-service", as: user)
        defer { client.close() }
        let zones = try await client.call("changes.fetchDatabase", ["database": .string(database)])["changedZones"]?.arrayValue ?? []
        var records: [String: String] = [:]
        for zone in zones {
            var since = JSONValue.null
            while true {
                let page = try await client.call("changes.fetchZone", ["database": .string(database), "zoneID": zone, "since": since, "limit": 400])
                for record in page["changed"]?.arrayValue ?? [] where record["recordType"]?.stringValue?.hasPrefix("CD_") == true {
                    records[record["recordName"]?.stringValue ?? "?"] = Self.summary(value: record["fields"]?["CD_value"]?["value"],
                                                                                      note: record["fields"]?["CD_note"]?["value"])
                }
                guard page["moreComing"] == true else { break }
                since = page["token"] ?? .null
            }
        }
        return records
    }

    static func summary(value: JSONValue?, note: JSONValue?) -> String {
        "\(value?.doubleValue.map { String($0) } ?? "nil")|\(note?.stringValue ?? "nil")"
    }
}
