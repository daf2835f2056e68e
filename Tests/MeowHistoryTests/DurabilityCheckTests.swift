import MeowHistory
import MeowWire
import Testing

@Suite("The durability check catches an acknowledged write missing from the end state")
struct DurabilityCheckTests {
    func failures(_ run: RunRecord) -> [CheckFailure] { Checker().check(run) }

    @Test("durability: an acknowledged update the cloud and the devices no longer have")
    func lostAcknowledgedWrite() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.update("B", "CareEvent", ID.event, ["note": "b-3"], stamp: 110)
        story.send("B")
        story.fetch("A")
        let stale = ["note": JSONValue.string("a-0")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", stale)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", stale)]),
                                      device("B", "alice", [object(ID.event, "CareEvent", stale)])])
        let found = failures(run)
        #expect(found.map(\.check) == ["durability", "durability", "durability"])
        let cloud = found.first
        #expect(cloud?.entries == [3, 0])
        #expect(cloud?.explanation ==
            #"B's update #3 of CareEvent 7F3A9C21…'s note (stamp 110) was acknowledged and nothing later superseded it, but the cloud has "a-0" from A's insert #0 of CareEvent 7F3A9C21…'s note (stamp 100) instead of "b-3"."#)
        #expect(found.dropFirst().map(\.explanation).allSatisfy { $0.contains("but device") && $0.contains("B's update #3") })
    }

    @Test("durability: an acknowledged insert missing from a device of its owner")
    func insertMissingOnAReadingDevice() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        let values = ["note": JSONValue.string("a-0")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", values)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", values)]), device("B", "alice", [])])
        let found = failures(run)
        #expect(found.map(\.check) == ["durability"])
        #expect(found.first?.entries == [0])
        #expect(found.first?.explanation.contains("A's insert #0 of CareEvent 7F3A9C21… was acknowledged but device B has no such CareEvent") == true)
    }
}
