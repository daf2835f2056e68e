import MeowHistory
import MeowWire
import Testing

@Suite("The checker runs the built-in checks and a team's invariants")
struct CheckerTests {
    @Test("A team's invariant runs with the built-in checks and reports under its own name")
    func teamInvariant() {
        var story = Story(devices: ["A": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        let values = ["note": JSONValue.string("a-0")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", values)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", values)])])
        // example: team-invariant
        let noEvents = Invariant("noEventsWithoutSession") { run in
            run.final.devices.flatMap(\.objects).filter { $0.entity == "CareEvent" && $0.values["session"] == nil }
                .map { "event \($0.uuid) has no session" }
        }
        let found = Checker(invariants: [noEvents]).check(run)
        // end example
        #expect(found == [CheckFailure(check: "noEventsWithoutSession", explanation: "event \(ID.event) has no session")])
        #expect(Set(Checker.standard.map(\.name)) == ["resolution", "durability", "permissionSafety", "conflicts",
                                                      "duplicates", "historyTokens", "convergence", "doctor"])
    }
}
