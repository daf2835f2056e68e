import MeowHistory
import MeowWire
import Testing

@Suite("The permissionSafety check catches a value written without write permission seen anywhere")
struct PermissionSafetyCheckTests {
    func failures(_ run: RunRecord) -> [CheckFailure] { Checker().check(run) }

    /// P edits a session after the owner lowered them to readOnly while P was offline; P's send
    /// is refused, yet the value shows on the owner's other device between two fetches and stays
    /// in the cloud.
    @Test("permissionSafety: a readOnly participant's value visible between two fetches and in the final state")
    func readOnlyParticipantsValueVisible() {
        var story = Story(devices: ["A": "alice", "A2": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        story.setPermission("A", zoneName: "Share-1", user: "pat", "readOnly")
        story.update("P", "CareSession", ID.session, ["title": "p-5"], stamp: 200)
        story.send("P", saved: 0, reverted: 1)
        story.fetch("A2")
        story.observe("A2", [object(ID.session, "CareSession", ["title": "p-5"])])
        story.fetch("A2")
        story.fetch("P")
        let kept = ["title": JSONValue.string("s-0")]
        let run = story.run(
            cloud: [zone("alice", "Share-1", [record(ID.session, "CareSession", ["title": "p-5"])],
                         participants: [.init(user: "pat", permission: "readOnly", acceptance: "accepted")])],
            devices: [device("A", "alice", [object(ID.session, "CareSession", kept)]),
                      device("A2", "alice", [object(ID.session, "CareSession", kept)]),
                      device("P", "pat", [object(ID.session, "CareSession", kept, store: "shared")])])
        let found = failures(run)
        #expect(found.map(\.check) == ["permissionSafety", "permissionSafety"])
        #expect(found.first?.entries == [5, 6, 8])
        #expect(found.first?.explanation ==
            #"P's update #5 of CareSession 5E2B8D10…'s title (stamp 200) set "p-5" without write permission when P's sync.send #6 reached the cloud (pat had readOnly on alice/Share-1), so the rules refuse it, yet device A2 showed it in observe #8."#)
        #expect(found.last?.entries == [5, 6])
        #expect(found.last?.explanation.hasSuffix("yet the cloud has it at the end.") == true)
    }

    @Test("permissionSafety: the refused writer's own device still shows its value after its next fetch")
    func refusedValueOutlivesTheWritersFetch() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readOnly")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        story.update("P", "CareSession", ID.session, ["title": "p-4"], stamp: 200)
        story.observe("P", [object(ID.session, "CareSession", ["title": "p-4"], store: "shared")])
        story.send("P", saved: 0, reverted: 1)
        story.fetch("P")
        story.observe("P", [object(ID.session, "CareSession", ["title": "p-4"], store: "shared")])
        let kept = ["title": JSONValue.string("s-0")]
        let run = story.run(cloud: [zone("alice", "Share-1", [record(ID.session, "CareSession", kept)])],
                            devices: [device("A", "alice", [object(ID.session, "CareSession", kept)]),
                                      device("P", "pat", [object(ID.session, "CareSession", kept, store: "shared")])])
        let found = failures(run)
        #expect(found.map(\.check) == ["permissionSafety"])
        #expect(found.first?.entries == [4, 6, 8, 7])
        #expect(found.first?.explanation.hasSuffix("yet device P showed it in observe #8 after its fetch #7 took it back.") == true)
    }
}
