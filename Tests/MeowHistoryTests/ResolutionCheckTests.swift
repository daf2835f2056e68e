import MeowHistory
import MeowWire
import Testing

@Suite("The resolution check catches an outcome left unknown")
struct ResolutionCheckTests {
    func failures(_ run: RunRecord) -> [CheckFailure] { Checker().check(run) }

    @Test("resolution: a send that timed out and was never resolved from the cloud's log")
    func unresolvedTimeout() {
        var story = Story(devices: ["A": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A", outcome: .unknown(reason: "no answer within 5 s"))
        story.send("A")
        let values = ["note": JSONValue.string("a-0")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", values)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", values)])])
        let found = failures(run)
        #expect(found.map(\.check) == ["resolution"])
        #expect(found.first?.entries == [1])
        #expect(found.first?.explanation == "A's sync.send #1 has no outcome (unknown: no answer within 5 s); the runner must resolve it from the cloud's request log, and it names no cloud request.")

        var resolved = run
        resolved.history[1].outcome = .resolved(committed: true, evidence: "request log #2: records.modify ok")
        #expect(failures(resolved) == [])
    }
}
