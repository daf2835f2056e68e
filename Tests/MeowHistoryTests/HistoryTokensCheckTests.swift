import MeowHistory
import MeowWire
import Testing

@Suite("The historyTokens check catches a gap in a store's history tokens")
struct HistoryTokensCheckTests {
    func failures(_ run: RunRecord) -> [CheckFailure] { Checker().check(run) }

    @Test("historyTokens: a gap inside a store's tokens, and a token that goes back")
    func tokenGap() {
        var story = Story(devices: ["A": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        let values = ["note": JSONValue.string("a-0")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", values)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", values)],
                                             tokens: ["private": [4, 5, 7], "shared": [2, 3, 3]]),
                                      // Purged up to 5: a list that starts late is no gap.
                                      device("B", "alice", [object(ID.event, "CareEvent", values)],
                                             tokens: ["private": [5, 6, 7], "shared": []])])
        let found = failures(run)
        #expect(found.map(\.check) == ["historyTokens", "historyTokens"])
        #expect(found.first?.explanation == "device A's private store history tokens jump from 5 to 7 (token 6 is missing).")
        #expect(found.last?.explanation == "device A's shared store history tokens go from 3 to 3, not up by one.")
    }
}
