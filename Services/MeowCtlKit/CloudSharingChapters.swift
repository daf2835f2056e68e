import CloudWire
import Foundation
import MeowWire
import StoreWire

/// Chapters 3–5: Olivia shares Mochi's care log with Pablo from device A, first read-only, then
/// read-write; Pablo's device P accepts, is refused, then adds an insulin event Olivia receives.
struct CloudSharingChapters {
    let deployment: Deployment
    let transcript: DemoTranscript

    /// What the chapters hand on to each other.
    final class State {
        var deviceA: Device?
        var deviceP: Device?
        var zoneName = ""
    }

    func tell() async {
        let state = State()
        defer { state.deviceA?.client.close(); state.deviceP?.client.close() }
        await transcript.run("3. Olivia shares Mochi's care log with Pablo, read-only") { try await shareReadOnly(state) }
        await transcript.run("4. Pablo's write is refused (read-only share)") { try await refusedWrite(state) }
        await transcript.run("5. Olivia grants readWrite; Pablo adds an insulin event; Olivia sees it") { try await grantedWrite(state) }
    }

    private func shareReadOnly(_ state: State) async throws {
        let deviceA = try await Device(deployment, "device-a")
        state.deviceA = deviceA
        let session = try await deviceA.fetch("CareSession", predicate: "id == 'mochi'").first?.objectID ?? ""
        let created = try await deviceA.read("share.create", [
            "objectID": .string(session), "participants": [["user": "pablo", "permission": "readOnly"]]], as: ShareCreation.self)
        state.zoneName = created.zoneName
        transcript.say("device A: share.create → zone \(state.zoneName), \(created.movedRecords) records moved from the private zone into it")
        let stillPrivate = try await deviceA.fetch("CareEvent", predicate: "session.id == 'mochi'", stores: ["Private"]).count
        transcript.check(stillPrivate == 3, "on device A the session and its readings stay in the private store (only their records moved)")

        let deviceP = try await Device(deployment, "device-p")
        state.deviceP = deviceP
        let invitations = try await deviceP.read("share.invitations", as: InvitationsResult.self).invitations
        transcript.check(invitations.contains { $0.zoneID.zoneName == state.zoneName && $0.permission == .readOnly },
                         "device P sees Pablo's read-only invitation")
        let accepted = try await deviceP.client.call("share.accept", ["zoneName": .string(state.zoneName), "ownerName": "olivia"])
        transcript.say("device P: share.accept → fetched \(MeowCtl.compactJSON(accepted["fetch"] ?? .null))")
        let shared = try await deviceP.fetch("CareEvent", predicate: "session.id == 'mochi'", stores: ["Shared"]).count
        let privateCount = try await deviceP.fetch("CareEvent", predicate: "session.id == 'mochi'", stores: ["Private"]).count
        transcript.check(shared == 3 && privateCount == 0, "device P has Mochi's readings in its shared store only (\(shared) shared, \(privateCount) private)")
    }

    private func refusedWrite(_ state: State) async throws {
        guard let deviceP = state.deviceP else { return transcript.skip("chapter 3 did not finish") }
        let session = try await deviceP.fetch("CareSession", predicate: "id == 'mochi'", stores: ["Shared"]).first?.objectID ?? ""
        let pendingBefore = try await deviceP.pendingCount()
        let context = try await deviceP.openContext()
        _ = try await deviceP.insert(context, "CareEvent", [
            "id": "feed-1", "eventTypeRaw": "feeding", "value": 30.0, "occurredAt": "2026-11-30T20:00:00Z",
            "updatedAt": "2026-11-30T20:00:00Z", "session": .string(session)])
        do {
            _ = try await deviceP.save(context)
            transcript.check(false, "device P refuses the insert locally")
        } catch {
            let error = error as? WireError ?? WireError(.internalError, "\(error)")
            transcript.check(error.code == .permissionFailure, "device P refuses the feeding event locally: \(error.code) — \(error.message)")
        }
        let pending = try await deviceP.pendingCount() - pendingBefore
        let stray = try await deviceP.count("CareEvent", predicate: "id == 'feed-1'")
        transcript.check(pending == 0 && stray == 0,
                         "nothing was saved and nothing was queued for the cloud")

        // The server is the authority: the same write sent straight to the cloud is refused too.
        let pablo = try await deployment.connect("sync-service", as: "pablo")
        defer { pablo.close() }
        do {
            _ = try await pablo.call("records.modify", ["database": "shared", "saves": [[
                "recordName": "feed-1", "recordType": "CD_CareEvent",
                "zoneID": ["zoneName": .string(state.zoneName), "ownerName": "olivia"],
                "fields": ["CD_eventTypeRaw": ["type": "string", "value": "feeding"]]]]])
            transcript.check(false, "the server refuses pablo's write")
        } catch {
            let item = error.details["partialErrors"]?["feed-1"]
            transcript.check(item?["code"] == "permissionFailure",
                             "sent straight to the cloud, the server refuses it: \(item?["code"]?.stringValue ?? error.code.rawValue) — \(item?["message"]?.stringValue ?? error.message)")
        }
    }

    private func grantedWrite(_ state: State) async throws {
        guard let deviceA = state.deviceA, let deviceP = state.deviceP else { return transcript.skip("chapter 3 did not finish") }
        _ = try await deviceA.client.call("share.setPermission", ["zoneName": .string(state.zoneName), "user": "pablo", "permission": "readWrite"])
        transcript.say("device A: share.setPermission pablo readWrite")
        _ = try await deviceP.client.call("sync.fetch", [:])
        let shares = try await deviceP.shares()
        transcript.check(shares.contains { $0.zoneName == state.zoneName && $0.permission == .readWrite },
                         "device P's fetch brings the new permission into its share metadata")
        let session = try await deviceP.fetch("CareSession", predicate: "id == 'mochi'", stores: ["Shared"]).first?.objectID ?? ""
        let context = try await deviceP.openContext()
        _ = try await deviceP.insert(context, "CareEvent", [
            "id": "insulin-1", "eventTypeRaw": "insulin", "value": 2.0, "occurredAt": "2026-11-30T20:05:00Z",
            "updatedAt": "2026-11-30T20:05:00Z", "session": .string(session)])
        let entry = try await deviceP.save(context).inserted?.first
        transcript.check(entry?.store == "Shared" && entry?.reason == .relatedObject,
                         "device P routes the new insulin event to its shared store, the session's store (\(entry?.reason.rawValue ?? "?"))")
        let sent = try await deviceP.client.call("sync.send", [:])
        transcript.say("device P: sync.send → \(MeowCtl.compactJSON(sent))")
        _ = try await deviceA.client.call("sync.fetch", [:])
        let received = try await deviceA.fetch("CareEvent", predicate: "id == 'insulin-1'")
        transcript.check(received.first?.store == "Private" && received.first?["value"]?.doubleValue == 2,
                         "device A fetches Pablo's insulin event into Olivia's private store (the owner's copy)")
    }
}
