import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Seeded random lives of one share: the owner O logs and deletes events in the shared
    /// session, changes alice's permission (readOnly, readWrite, none), removes and re-invites
    /// her, stops sharing and shares again (a new zone); her device P accepts, leaves, fetches
    /// and logs events of its own; both send and fetch
    /// in any order. P's events count when P's send finds alice reading with readWrite in the
    /// zone P logged them in (not one the share left when it was stopped), and are
    /// gone when it does not, when P leaves, or when P fetches while not reading. After both have
    /// synced, O holds exactly the events that count, and P's shared store holds them and the
    /// session while alice reads, and nothing of the share otherwise.
    @Suite("Mirroring: random lives of a share converge on the participant's device", .timeLimit(.minutes(5)))
    struct SharingLifecycleTests {
        @Test("seeded invitations, acceptances, permission changes, removals and leavings", arguments: ConvergenceTests.seeds(from: 500))
        func randomShareLives(seed: UInt64) async throws {
            try await randomShareLife(seed: seed, ownersSecondDevice: false)
        }

        /// The owner's second device B acts on stale zone knowledge while O moves the session's
        /// graph into a share (and into a new one after stopping). What this found, each pinned
        /// by a test in `SharingTests`: B's delete met only the old zone's tombstone (seed 576,
        /// `mirror_deleted`); an event B logged into the zone its session had left stayed there,
        /// unseen by participants (seed 503, the importing device moves it); B applied the old
        /// zone's tombstones before the new zone's records and the session's delete cascaded to
        /// an event only B knew (seeds 546 and 568, tombstones held until the fetch's end).
        @Test("with the owner's second device logging and deleting too", arguments: ConvergenceTests.seeds(from: 500))
        func randomShareLivesWithTheOwnersSecondDevice(seed: UInt64) async throws {
            try await randomShareLife(seed: seed, ownersSecondDevice: true)
        }

        func randomShareLife(seed: UInt64, ownersSecondDevice: Bool) async throws {
            var random = SplitMix64(state: seed)
            func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }
            let cloud = try await Cloud.start()
            let o = try await Device.start("O", user: "owner", cloud: cloud)
            let p = try await Device.start("P", user: "alice", cloud: cloud)
            let session = try await o.insertSession("mochi")
            var events: Set<String> = ["s-0", "s-1"]
            try await o.insertEvents(events.sorted(), session: session)
            try await o.send()
            // The owner's second device B logs and deletes events in the session too.
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            try await b.fetch()
            let bSession = try #require(try await b.object(id: "mochi", entity: "CareSession")?["objectID"]?.stringValue)
            var permission = pick(2) == 0 ? "readOnly" : "readWrite"
            let created = try await o.call("share.create", ["objectID": .string(session),
                                                            "participants": [["user": "alice", "permission": .string(permission)]]])
            var zoneName = try #require(created["zoneName"]?.stringValue)
            var shared = true
            var invited = true, accepted = false
            var steps: [String] = []
            var counter = 1
            /// P's events not sent yet, each with the zone of the session P logged it in: one
            /// logged in a zone the share has since left (stopped and shared again) never counts.
            var tentative: [(id: String, zone: String?)] = []
            /// The zone of the session P holds (as of P's last accept or fetch).
            var pZone: String?
            var reads: Bool { accepted && permission != "none" }
            func pSent() {
                if reads && permission == "readWrite" { events.formUnion(tentative.filter { $0.zone == zoneName }.map(\.id)) }
                tentative = []
            }

            for _ in 0..<(ownersSecondDevice ? 60 : 50) {
                if ownersSecondDevice, pick(6) == 0 {
                    switch pick(4) {
                    case 0:
                        counter += 1
                        try await b.insertEvents(["b-\(counter)"], session: bSession)
                        events.insert("b-\(counter)")
                        steps.append("B logs b-\(counter)")
                    case 1:
                        guard let id = try await b.ids().filter({ events.contains($0) }).randomElement(using: &random) else { continue }
                        try await b.delete(try #require(try await b.object(id: id)?["objectID"]?.stringValue))
                        events.remove(id)
                        steps.append("B deletes \(id)")
                    case 2:
                        steps.append("B sends \(JSONWriter.text(try await b.send()))")
                    default:
                        steps.append("B fetches \(JSONWriter.text(try await b.fetch()))")
                    }
                    continue
                }
                let roll = pick(100)
                if roll < 18 {
                    let ids = (0..<(1 + pick(2))).map { _ in counter += 1; return "s-\(counter)" }
                    try await o.insertEvents(ids, session: session)
                    events.formUnion(ids)
                    steps.append("O logs \(ids)")
                } else if roll < 26, let id = try await o.ids().filter({ events.contains($0) }).randomElement(using: &random) {
                    try await o.delete(try #require(try await o.object(id: id)?["objectID"]?.stringValue))
                    events.remove(id)
                    steps.append("O deletes \(id)")
                } else if roll < 38 {
                    try await o.send()
                    steps.append("O sends")
                } else if roll < 48 {
                    try await p.fetch()
                    // A fetch while not reading removes the zone, and P's unsent events with it.
                    if !reads { tentative = [] }
                    pZone = reads ? zoneName : nil
                    steps.append("P fetches")
                } else if roll < 52 {
                    let report = try await p.send()
                    pSent()
                    steps.append("P sends \(JSONWriter.text(report))")
                } else if roll < 55, shared, pick(3) == 0 {
                    // O stops sharing: alice loses the zone, and P's unsent events with it.
                    try await o.call("share.stop", ["zoneName": .string(zoneName)])
                    shared = false
                    invited = false
                    accepted = false
                    steps.append("O stops sharing")
                } else if roll < 55, !shared {
                    permission = pick(2) == 0 ? "readOnly" : "readWrite"
                    let again = try await o.call("share.create", ["objectID": .string(session),
                                                                  "participants": [["user": "alice", "permission": .string(permission)]]])
                    zoneName = try #require(again["zoneName"]?.stringValue)
                    shared = true
                    invited = true
                    steps.append("O shares again \(permission) in \(zoneName.suffix(8))")
                } else if roll < 58, invited {
                    let next = ["readOnly", "readWrite", "none"].filter { $0 != permission }[pick(2)]
                    try await o.call("share.setPermission", ["zoneName": .string(zoneName), "user": "alice", "permission": .string(next)])
                    permission = next
                    steps.append("O makes alice \(next)")
                } else if roll < 66, invited {
                    try await o.call("share.removeParticipant", ["zoneName": .string(zoneName), "user": "alice"])
                    invited = false
                    accepted = false
                    steps.append("O removes alice")
                } else if roll < 74, shared, !invited {
                    permission = pick(2) == 0 ? "readOnly" : "readWrite"
                    try await o.call("share.invite", ["zoneName": .string(zoneName), "user": "alice", "permission": .string(permission)])
                    invited = true
                    steps.append("O invites alice \(permission)")
                } else if roll < 82, invited, !accepted {
                    try await p.call("share.accept", ["zoneName": .string(zoneName), "ownerName": "owner"])
                    accepted = true
                    // Accepting fetches: not reading (at none), P learns the zone left it.
                    if !reads { tentative = [] }
                    pZone = reads ? zoneName : nil
                    steps.append("P accepts")
                } else if roll < 86, accepted {
                    try await p.call("share.leave", ["zoneName": .string(zoneName), "ownerName": "owner"])
                    invited = false
                    accepted = false
                    tentative = []
                    pZone = nil
                    steps.append("P leaves")
                } else if roll < 95 {
                    // P logs an event in the session, if it holds it and believes it may write.
                    guard let pSession = try await p.objects("CareSession", store: "Shared").first?["objectID"]?.stringValue else { continue }
                    counter += 1
                    let id = "p-\(counter)"
                    do {
                        try await p.insertEvents([id], session: pSession)
                    } catch let error as WireError where error.code == .permissionFailure {
                        steps.append("P may not log \(id)")
                        continue
                    }
                    tentative.append((id, pZone))
                    steps.append("P logs \(id)")
                } else {
                    try await o.fetch()
                    steps.append("O fetches")
                }
            }
            for _ in 0..<2 {
                try await p.send()
                pSent()
                try await o.send()
                try await b.send()
                try await p.fetch()
                try await o.fetch()
                try await b.fetch()
            }
            let trace = "seed \(seed):\n" + steps.joined(separator: "\n")
            let onO = try await o.ids()
            #expect(onO == events.sorted(), "O holds \(onO), the model \(events.sorted()); \(trace)")
            let onB = try await b.ids()
            #expect(onB == events.sorted(), "B holds \(onB), the model \(events.sorted()); \(trace)")
            let onP = try await p.ids("CareEvent", store: "Shared")
            #expect(onP == (reads ? events.sorted() : []), "P holds \(onP) (alice reads: \(reads)); \(trace)")
            #expect(try await p.objects("CareSession", store: "Shared").count == (reads ? 1 : 0), "P's session; \(trace)")
            #expect(try await p.objects("CareEvent", store: "Private").isEmpty, "nothing shared lands in P's private store; \(trace)")
            let shares = try await p.call("share.list")["shares"]?.arrayValue ?? []
            if reads {
                #expect(shares.first?["permission"]?.stringValue == permission, "P's share metadata \(shares); \(trace)")
            }
            #expect(try await o.pending() == 0, "O's pending; \(trace)")
            #expect(try await p.pending() == 0, "P's pending; \(trace)")
            _ = await o.stop()
            _ = await b.stop()
            _ = await p.stop()
            await cloud.stop()
        }
    }
}
