import Foundation
import MeowWire

/// Chapters 3–5: Olivia shares Mochi's care log with Pablo, first read-only, then read-write.
/// The cloud steps are the requests NSPersistentCloudKitContainer makes; until the store-service
/// has its cloud mirror, the demo also performs the mirror's import into device P's shared store
/// (author "sync", as the mirror will).
struct CloudSharingChapters {
    let deployment: Deployment
    let transcript: DemoTranscript
    let shareZone = "com.apple.coredata.cloudkit.share.\(UUID().uuidString)"

    var zoneID: JSONValue { ["zoneName": .string(shareZone)] }
    var pabloZoneID: JSONValue { ["zoneName": .string(shareZone), "ownerName": "olivia"] }

    /// What the chapters hand on to each other.
    final class State {
        var olivia: WireClient?
        var pablo: WireClient?
        var deviceP: Device?
        var token = JSONValue.null
    }

    func tell() async {
        let state = State()
        defer { state.olivia?.close(); state.pablo?.close(); state.deviceP?.client.close() }
        await transcript.run("3. Olivia shares Mochi's care log with Pablo, read-only") { try await shareReadOnly(state) }
        await transcript.run("4. Pablo's write is refused (read-only share)") { try await refusedWrite(state) }
        await transcript.run("5. Olivia grants readWrite; Pablo adds an insulin event; Olivia sees it") { try await grantedWrite(state) }
    }

    private func shareReadOnly(_ state: State) async throws {
            let owner = try await deployment.connect("sync-service", as: "olivia")
            state.olivia = owner
            _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [zoneID]])
            transcript.say("olivia: zones.save \(shareZone)")
            var saves: [JSONValue] = [record("session-mochi", "CD_CareSession", ["CD_id": string("mochi"), "CD_title": string("Mochi's care log")])]
            for (time, value) in [("07:30", 182.0), ("12:10", 165.0), ("19:45", 143.0)] {
                saves.append(record("bg-\(time)", "CD_CareEvent", [
                    "CD_id": string("bg-\(time)"), "CD_eventTypeRaw": string("bloodGlucose"),
                    "CD_value": ["type": "double", "value": .double(value)], "CD_session": string("session-mochi")]))
            }
            saves.append(["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "zoneID": zoneID, "fields": [:]])
            let saved = try await owner.call("records.modify", ["database": "private", "saves": .array(saves)])
            transcript.check(saved["saved"]?.arrayValue?.count == 5,
                             "olivia: records.modify saves the session, its 3 readings and the zone-wide share cloudkit.zoneshare in one request")
            state.token = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": zoneID])["token"] ?? .null
            _ = try await owner.call("participants.add", ["zoneID": zoneID, "user": "pablo", "permission": "readOnly"])
            transcript.say("olivia: participants.add pablo readOnly")

            let participant = try await deployment.connect("sync-service", as: "pablo")
            state.pablo = participant
            let invitations = try await participant.call("shares.invitations", Empty())["invitations"]?.arrayValue ?? []
            transcript.check(invitations.contains { $0["zoneID"]?["zoneName"] == .string(shareZone) && $0["acceptanceStatus"] == "pending" },
                             "pablo sees a pending invitation")
            _ = try await participant.call("shares.accept", ["zoneID": pabloZoneID])
            let zones = try await participant.call("changes.fetchDatabase", ["database": "shared"])["changedZones"]?.arrayValue ?? []
            transcript.check(zones.contains(pabloZoneID), "after shares.accept the zone appears in pablo's shared database")
            let changes = try await participant.call("changes.fetchZone", ["database": "shared", "zoneID": pabloZoneID])
            let records = (changes["changed"]?.arrayValue ?? []).filter { $0["recordType"] != "cloudkit.share" }
            transcript.check(records.count == 4, "pablo fetches the session and its 3 readings from the shared database")

            let device = try await Device(deployment, "device-p")
            state.deviceP = device
            let context = try await device.openContext(author: "sync")
            var sessionObject = ""
            for record in records.sorted(by: { ($0["recordType"]?.stringValue ?? "") > ($1["recordType"]?.stringValue ?? "") }) {
                let name = record["recordName"]?.stringValue ?? ""
                let fields = record["fields"] ?? [:]
                if record["recordType"] == "CD_CareSession" {
                    sessionObject = try await device.insert(context, "CareSession", [
                        "id": fields["CD_id"]?["value"] ?? "mochi", "title": fields["CD_title"]?["value"] ?? "",
                        "isDefault": false], store: "Shared", uuid: name, zone: shareZone)
                } else {
                    _ = try await device.insert(context, "CareEvent", [
                        "id": fields["CD_id"]?["value"] ?? .string(name), "eventTypeRaw": "bloodGlucose",
                        "value": fields["CD_value"]?["value"] ?? .null, "occurredAt": "2026-11-30T00:00:00Z",
                        "updatedAt": "2026-11-30T00:00:00Z", "session": .string(sessionObject)],
                        store: "Shared", uuid: name, zone: shareZone)
                }
            }
            let imported = try await device.save(context)
            _ = try await device.client.call("share.setMetadata", ["zoneName": .string(shareZone), "ownerName": "olivia", "permission": "readOnly"])
            transcript.say("device P: imported \(imported["inserted"]?.arrayValue?.count ?? 0) records as author 'sync' (the mirror's import, done by the demo in this build)")
            let shared = try await device.fetch("CareEvent", predicate: "session.id == 'mochi'", stores: ["Shared"]).count
            let privateCount = try await device.fetch("CareEvent", predicate: "session.id == 'mochi'", stores: ["Private"]).count
            transcript.check(shared == 3 && privateCount == 0, "device P has Mochi's readings in its shared store only (\(shared) shared, \(privateCount) private)")
    }

    private func refusedWrite(_ state: State) async throws {
            guard let device = state.deviceP, let participant = state.pablo else { return transcript.skip("chapter 3 did not finish") }
            let session = try await device.fetch("CareSession", predicate: "id == 'mochi'", stores: ["Shared"]).first?["objectID"]?.stringValue ?? ""
            let context = try await device.openContext()
            _ = try await device.insert(context, "CareEvent", [
                "id": "feed-1", "eventTypeRaw": "feeding", "value": 30.0, "occurredAt": "2026-11-30T20:00:00Z",
                "updatedAt": "2026-11-30T20:00:00Z", "session": .string(session)])
            do {
                _ = try await device.save(context)
                transcript.check(false, "device P refuses the insert locally")
            } catch {
                let error = error as? WireError ?? WireError(.internalError, "\(error)")
                transcript.check(error.code == .permissionFailure, "device P refuses the feeding event locally: \(error.code) — \(error.message)")
            }
            let stray = try await device.count("CareEvent", predicate: "id == 'feed-1'")
            transcript.check(stray == 0, "nothing of the refused save was written")
            do {
                _ = try await participant.call("records.modify", ["database": "shared", "saves": [
                    record("feed-1", "CD_CareEvent", ["CD_id": string("feed-1"), "CD_eventTypeRaw": string("feeding"),
                                                      "CD_session": string("session-mochi")], zone: pabloZoneID)]])
                transcript.check(false, "the server refuses pablo's write")
            } catch {
                let item = error.details["partialErrors"]?["feed-1"]
                transcript.check(item?["code"] == "permissionFailure",
                                 "the server refuses it too: \(item?["code"]?.stringValue ?? error.code.rawValue) — \(item?["message"]?.stringValue ?? error.message)")
            }
    }

    private func grantedWrite(_ state: State) async throws {
            guard let device = state.deviceP, let participant = state.pablo, let owner = state.olivia else { return transcript.skip("chapter 3 did not finish") }
            _ = try await owner.call("participants.setPermission", ["zoneID": zoneID, "user": "pablo", "permission": "readWrite"])
            transcript.say("olivia: participants.setPermission pablo readWrite")
            _ = try await device.client.call("share.setMetadata", ["zoneName": .string(shareZone), "ownerName": "olivia", "permission": "readWrite"])
            let session = try await device.fetch("CareSession", predicate: "id == 'mochi'", stores: ["Shared"]).first?["objectID"]?.stringValue ?? ""
            let context = try await device.openContext()
            _ = try await device.insert(context, "CareEvent", [
                "id": "insulin-1", "eventTypeRaw": "insulin", "value": 2.0, "occurredAt": "2026-11-30T20:05:00Z",
                "updatedAt": "2026-11-30T20:05:00Z", "session": .string(session)])
            let saved = try await device.save(context)
            let entry = saved["inserted"]?.arrayValue?.first
            transcript.check(entry?["store"] == "Shared" && entry?["reason"] == "relatedObject",
                             "device P routes the new insulin event to its shared store, the session's store (\(entry?["reason"]?.stringValue ?? "?"))")
            let uploaded = try await participant.call("records.modify", ["database": "shared", "saves": [
                record("insulin-1", "CD_CareEvent", ["CD_id": string("insulin-1"), "CD_eventTypeRaw": string("insulin"),
                                                     "CD_value": ["type": "double", "value": 2.0], "CD_session": string("session-mochi")],
                       zone: pabloZoneID)]])
            transcript.check(uploaded["saved"]?.arrayValue?.count == 1, "pablo's insulin event is saved into olivia's share zone")
            let changes = try await owner.call("changes.fetchZone", ["database": "private", "zoneID": zoneID, "since": state.token])
            let names = (changes["changed"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
            transcript.check(names.contains("insulin-1"), "olivia's fetch of zone changes brings pablo's insulin event (\(names.joined(separator: ", ")))")
    }

    func string(_ value: String) -> JSONValue { ["type": "string", "value": .string(value)] }

    func record(_ name: String, _ type: String, _ fields: [String: JSONValue], zone: JSONValue? = nil) -> JSONValue {
        ["recordName": .string(name), "recordType": .string(type), "zoneID": zone ?? zoneID, "fields": .object(fields)]
    }
}
