import MeowHistory
import MeowWire
import Testing

@Suite("The convergence and doctor checks catch what settling left different or wrong")
struct FinalLinesCheckTests {
    func failures(_ run: RunRecord) -> [CheckFailure] { Checker().check(run) }

    @Test("doctor and convergence: a finding and a difference left after settling")
    func doctorFindingAndDivergence() {
        var story = Story(devices: ["A": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        let values = ["note": JSONValue.string("a-0")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", values)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", values)],
                                             doctor: ["orphan CareEvent 7F3A9C21 in the shared store"],
                                             divergence: ["CareEvent 7F3A9C21: note is \"a-0\" here, absent in the cloud"])])
        let found = failures(run)
        #expect(found.map(\.check) == ["convergence", "doctor"])
        #expect(found.first?.explanation == #"device A still differs from the cloud after settling: CareEvent 7F3A9C21: note is "a-0" here, absent in the cloud."#)
        #expect(found.last?.explanation == "doctor found on device A: orphan CareEvent 7F3A9C21 in the shared store.")
    }
}
