import MeowHistory
import MeowWire
import Testing

@Suite("The conflicts check catches a record ending otherwise than the merge rules say")
struct ConflictsCheckTests {
    func failures(_ run: RunRecord) -> [CheckFailure] { Checker().check(run) }

    @Test("conflicts: the earlier of two concurrent edits ends as the value")
    func wrongConflictWinner() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.update("A", "CareEvent", ID.event, ["note": "a-3"], stamp: 120)
        story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 110)
        story.send("B")
        story.send("A")
        story.fetch("A")
        story.fetch("B")
        let wrong = ["note": JSONValue.string("b-4")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", wrong)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", wrong)]),
                                      device("B", "alice", [object(ID.event, "CareEvent", wrong)])])
        let found = failures(run)
        #expect(found.map(\.check) == ["conflicts", "conflicts", "conflicts"])
        #expect(found.first?.entries == [3, 4])
        #expect(found.first?.explanation ==
            #"A's update #3 of CareEvent 7F3A9C21…'s note (stamp 120) and B's update #4 of CareEvent 7F3A9C21…'s note (stamp 110) both changed it; the later stamp wins, so it should be "a-3", but the cloud has "b-4"."#)
    }

    @Test("conflicts: a removed participant's device still holds the shared session after settling")
    func removedParticipantKeepsTheZone() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        story.add("A", HistoryOp.shareRemove, ["zoneName": "Share-1", "user": "pat"])
        story.fetch("P")
        let kept = ["title": JSONValue.string("s-0")]
        let run = story.run(cloud: [zone("alice", "Share-1", [record(ID.session, "CareSession", kept)])],
                            devices: [device("A", "alice", [object(ID.session, "CareSession", kept)]),
                                      device("P", "pat", [object(ID.session, "CareSession", kept, store: "shared")])])
        let found = failures(run)
        #expect(found.map(\.check) == ["conflicts"])
        #expect(found.first?.explanation == "CareSession 5E2B8D10… is still on device P at the end, but pat may not read alice/Share-1: pat is removed on alice/Share-1.")
    }

    @Test("conflicts: an edit outlives the delete that wins over it")
    func editOutlivesItsDelete() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.update("B", "CareEvent", ID.event, ["note": "b-3"], stamp: 130)
        story.delete("A", "CareEvent", ID.event, stamp: 120)
        story.send("A")
        story.send("B")
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", ["note": "b-3"])])],
                            devices: [device("A", "alice", []), device("B", "alice", [])])
        let found = failures(run)
        #expect(found.map(\.check) == ["conflicts"])
        #expect(found.first?.entries == [3, 4])
        #expect(found.first?.explanation == "B's update #3 of CareEvent 7F3A9C21… met A's delete #4 of CareEvent 7F3A9C21…, and the delete wins (CareEvent's policy is deleteWins), but the cloud still has it with the edit's values.")
    }
}
