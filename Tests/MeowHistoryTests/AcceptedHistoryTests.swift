import MeowHistory
import MeowWire
import Testing

/// Crafted runs in which the pair did what the rules say: the checker finds nothing.
@Suite("Correct histories pass every check")
struct AcceptedHistoryTests {
    @Test("A concurrent edit resolved by stamps: the later edit is everywhere")
    func concurrentEditResolvedByStamps() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.update("A", "CareEvent", ID.event, ["note": "a-3"], stamp: 120)
        story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 110)
        story.send("B")
        story.observe("A", [object(ID.event, "CareEvent", ["note": "a-3"])])
        story.send("A")
        story.fetch("B")
        let winner = ["note": JSONValue.string("a-3")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", winner)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", winner)]),
                                      device("B", "alice", [object(ID.event, "CareEvent", winner)])])
        #expect(Checker().check(run) == [])
    }

    @Test("A delete wins over a concurrent edit, whether the editor sends or fetches first")
    func deleteWinsOverAnEdit() {
        for editorFetchesFirst in [false, true] {
            var story = Story(devices: ["A": "alice", "B": "alice"])
            story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
            story.send("A")
            story.fetch("B")
            story.delete("A", "CareEvent", ID.event, stamp: 120)
            story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 130)
            story.send("A")
            if editorFetchesFirst { story.fetch("B") }
            story.send("B", saved: 0)
            story.fetch("B")
            let run = story.run(cloud: [zone("alice", [])], devices: [device("A", "alice", []), device("B", "alice", [])])
            #expect(Checker().check(run) == [], "editor fetches first: \(editorFetchesFirst)")
        }
    }

    @Test("With resurrect, the edit brings the deleted record back")
    func resurrectBringsTheRecordBack() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.delete("A", "CareEvent", ID.event, stamp: 120)
        story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 130)
        story.send("A")
        story.send("B")
        story.fetch("A")
        let back = ["note": JSONValue.string("b-4")]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", back)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", back)]),
                                      device("B", "alice", [object(ID.event, "CareEvent", back)])],
                            deletePolicies: ["CareEvent": "resurrect"])
        #expect(Checker().check(run) == [])
    }

    @Test("A readOnly participant's refused edit shows only on its own device, until the send reverts it")
    func refusedReadOnlyEditReverted() {
        var story = Story(devices: ["A": "alice", "A2": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        story.setPermission("A", zoneName: "Share-1", user: "pat", "readOnly")
        story.update("P", "CareSession", ID.session, ["title": "p-5"], stamp: 200)
        story.observe("P", [object(ID.session, "CareSession", ["title": "p-5"], store: "shared")])
        story.send("P", saved: 0, reverted: 1)
        story.fetch("A2")
        story.observe("A2", [object(ID.session, "CareSession", ["title": "s-0"])])
        story.fetch("P")
        story.observe("P", [object(ID.session, "CareSession", ["title": "s-0"], store: "shared")])
        let kept = ["title": JSONValue.string("s-0")]
        let run = story.run(
            cloud: [zone("alice", "Share-1", [record(ID.session, "CareSession", kept)],
                         participants: [.init(user: "pat", permission: "readOnly", acceptance: "accepted")])],
            devices: [device("A", "alice", [object(ID.session, "CareSession", kept)]),
                      device("A2", "alice", [object(ID.session, "CareSession", kept)]),
                      device("P", "pat", [object(ID.session, "CareSession", kept, store: "shared")])])
        #expect(Checker().check(run) == [])
    }

    @Test("A participant who leaves with queued writes discards them: they reach no one")
    func participantLeftWithQueuedWrites() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        story.update("P", "CareSession", ID.session, ["title": "p-4"], stamp: 200)
        story.insert("P", "CareEvent", ID.event, ["note": "p-5", "session": .string(ID.session)], stamp: 201, store: "shared")
        story.leave("P", owner: "alice", zoneName: "Share-1")
        story.observe("P", [])
        story.send("P", saved: 0)
        story.fetch("A")
        let kept = ["title": JSONValue.string("s-0")]
        let run = story.run(
            cloud: [zone("alice", "Share-1", [record(ID.session, "CareSession", kept)],
                         participants: [.init(user: "pat", permission: "readWrite", acceptance: "removed")])],
            devices: [device("A", "alice", [object(ID.session, "CareSession", kept)]), device("P", "pat", [])])
        #expect(Checker().check(run) == [])
    }

    @Test("A write superseded by a later one: the later value stands and the earlier is not missed")
    func writeSupersededByALaterOne() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0", "mood": "calm-0"], stamp: 100)
        story.update("A", "CareEvent", ID.event, ["note": "a-1"], stamp: 110)
        story.send("A")
        story.fetch("B")
        story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 105)
        story.send("B")
        story.fetch("A")
        let values: [String: JSONValue] = ["note": "b-4", "mood": "calm-0"]
        let run = story.run(cloud: [zone("alice", [record(ID.event, "CareEvent", values)])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", values)]),
                                      device("B", "alice", [object(ID.event, "CareEvent", values)])])
        #expect(Checker().check(run) == [])
    }

    @Test("Values compare as the cloud stores them: a boolean as int64, an integer as a double, a date as seconds, a UUID in upper case")
    func valuesCompareAsStored() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["done": true, "count": 3, "ref": .string(ID.other.lowercased()),
                                                   "at": "2026-07-27T17:30:00.25+08:00"], stamp: 100)
        story.send("A")
        story.fetch("B")
        let cloud = CloudRecordState(recordName: ID.event, recordType: "CD_CareEvent", fields: [
            "CD_done": ["type": "int64", "value": 1], "CD_count": ["type": "double", "value": 3.0],
            "CD_ref": ["type": "string", "value": .string(ID.other)], "CD_at": ["type": "date", "value": 1_785_144_600.25]])
        let shown: [String: JSONValue] = ["done": true, "count": 3.0, "ref": .string(ID.other), "at": "2026-07-27T09:30:00.250Z"]
        let run = story.run(cloud: [zone("alice", [cloud])],
                            devices: [device("A", "alice", [object(ID.event, "CareEvent", shown)]),
                                      device("B", "alice", [object(ID.event, "CareEvent", shown)])])
        #expect(Checker().check(run) == [])
    }

    /// The runner writes a history as JSON lines, one entry a line; this one is read from text.
    static let jsonLines = #"""
    {"run":7,"index":0,"actor":"A","user":"alice","op":"object.insert","params":{"entity":"CareEvent","uuid":"7F3A9C21-0B4D-4E6F-8A1B-2C3D4E5F6A7B","values":{"note":"a-0"},"stamp":100},"invoke":0,"complete":1,"outcome":{"kind":"ok","result":{"store":"private"}},"cloudRequests":[]}
    {"run":7,"index":1,"actor":"A","user":"alice","op":"sync.send","params":{},"invoke":1,"complete":2,"outcome":{"kind":"ok","result":{"saved":1,"deleted":0,"conflictsResolved":0,"reverted":0,"dropped":0,"refused":0,"deferred":0,"requests":1,"pending":0}},"cloudRequests":[3]}
    {"run":7,"index":2,"actor":"B","user":"alice","op":"sync.fetch","params":{},"invoke":2,"complete":3,"outcome":{"kind":"ok","result":{"changedRecords":1}},"cloudRequests":[4,5]}
    {"run":7,"index":3,"actor":"B","user":"alice","op":"object.update","params":{"entity":"CareEvent","uuid":"7F3A9C21-0B4D-4E6F-8A1B-2C3D4E5F6A7B","values":{"note":"b-3"},"stamp":105},"invoke":3,"complete":4,"outcome":{"kind":"ok","result":{}},"cloudRequests":[]}
    {"run":7,"index":4,"actor":"B","user":"alice","op":"sync.send","params":{},"invoke":4,"outcome":{"kind":"resolved","committed":true,"evidence":"request log #6: records.modify ok"},"cloudRequests":[6]}
    {"run":7,"index":5,"actor":"explorer","op":"settle","params":{},"invoke":5,"complete":9,"outcome":{"kind":"ok","result":{}},"cloudRequests":[7,8,9]}
    """#

    @Test("A history read from JSON lines: accepted as it ended, and the lost write caught when the cloud lost it")
    func historyFromJSONLines() throws {
        let history = try Self.jsonLines.split(separator: "\n").map {
            try JSONValueDecoder().decode(HistoryEntry.self, from: Array($0.utf8))
        }
        #expect(history.count == 6)
        func run(_ note: JSONValue) -> RunRecord {
            let values = ["note": note]
            return RunRecord(seed: 7, history: history, final: FinalState(
                cloud: [zone("alice", [record(ID.event, "CareEvent", values)])],
                devices: [device("A", "alice", [object(ID.event, "CareEvent", values)]),
                          device("B", "alice", [object(ID.event, "CareEvent", values)])]))
        }
        #expect(Checker().check(run("b-3")) == [])
        let lost = Checker().check(run("a-0"))
        #expect(lost.map(\.check) == ["durability", "durability", "durability"])
        #expect(lost.first?.entries == [3, 0])
        #expect(lost.first?.explanation.hasPrefix("B's update #3 of CareEvent 7F3A9C21…'s note (stamp 105) was acknowledged") == true)
    }
}
