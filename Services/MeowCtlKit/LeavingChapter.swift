import Foundation
import MeowWire

/// Chapter 10: leaving is not deleting. In a zone-wide share a participant's delete removes
/// the data for everyone; leaving only ends that participant's access. Pablo leaves: his device
/// drops Mochi's log while Olivia's devices and the cloud keep it; invited again, he gets it back.
struct LeavingChapter {
    let deployment: Deployment
    let transcript: DemoTranscript

    func tell() async {
        await transcript.run("10. Pablo leaves the share: his copy goes, Olivia's log stays (leaving is not deleting)") {
            try await leave()
        }
    }

    private func leave() async throws {
        let deviceA = try await Device(deployment, "device-a")
        let deviceP = try await Device(deployment, "device-p")
        defer { deviceA.client.close(); deviceP.client.close() }
        guard let zone = try await deviceP.shares().first(where: { $0.ownerName == "olivia" })?.zoneName else {
            return transcript.check(false, "device P holds Olivia's share")
        }
        let before = try await deviceA.count("CareEvent", predicate: "session.id == 'mochi'")
        let left = try await deviceP.client.call("share.leave", ["zoneName": .string(zone), "ownerName": "olivia"])
        transcript.say("device P: share.leave → \(MeowCtl.compactJSON(left["zonesRemoved"] ?? .null))")
        let onP = try await deviceP.count("CareEvent", predicate: "session.id == 'mochi'")
        transcript.check(onP == 0, "device P no longer holds Mochi's log (its shared store dropped the zone)")
        _ = try await deviceA.client.call("sync.fetch", [:])
        let onA = try await deviceA.count("CareEvent", predicate: "session.id == 'mochi'")
        transcript.check(onA == before && onA > 0, "device A still has all \(onA) of Mochi's events: leaving deleted nothing in the cloud")
        _ = try await deviceA.client.call("share.invite", ["zoneName": .string(zone), "user": "pablo", "permission": "readOnly"])
        _ = try await deviceP.client.call("share.accept", ["zoneName": .string(zone), "ownerName": "olivia"])
        let back = try await deviceP.count("CareEvent", predicate: "session.id == 'mochi'")
        transcript.check(back == onA, "invited again and accepting, device P has the \(back) events back (a delete could not be undone this way)")
    }
}
