import MeowHistory
import MeowWire
import Testing

@Suite("The reference model of the documented merge and sharing rules")
struct ReferenceModelTests {
    /// A and B both edit the note of an event they both have; B sends first.
    func concurrentEdits(stampA: Int, stampB: Int) -> Story {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.update("A", "CareEvent", ID.event, ["note": "a-3"], stamp: stampA)
        story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: stampB)
        story.send("B")
        story.send("A")
        return story
    }

    @Test("A field both sides changed goes to the later stamp, and the model names the write that set it")
    func laterStampWins() {
        let expected = ReferenceModel().replay(concurrentEdits(stampA: 120, stampB: 110).entries)
        let event = expected.records[ID.event]
        #expect(event?.exists == true)
        #expect(event?.zone == .privateZone(of: "alice"))
        #expect(event?.fields["note"] == FieldWrite(value: "a-3", stamp: 120, device: "A", entry: 3))
        #expect(expected.fate(of: 4, field: "note") == .lostMerge(to: 3))
        #expect(expected.fate(of: 0, field: "note") == .overwritten(by: 4))
        #expect(event?.mergeLosers["note"] == [4])
    }

    @Test("A record's story lists what the rules made of each of its writes, then how it ends")
    func recordStory() {
        let expected = ReferenceModel().replay(concurrentEdits(stampA: 120, stampB: 110).entries)
        #expect(expected.story(of: ID.event) == [
            "A's insert #0 of CareEvent 7F3A9C21… (stamp 100): note overwritten by #4",
            "A's update #3 of CareEvent 7F3A9C21… (stamp 120): note holds",
            "B's update #4 of CareEvent 7F3A9C21… (stamp 110): note lost the merge to #3",
            "CareEvent 7F3A9C21… ends in alice/com.apple.coredata.cloudkit.zone with note from #3.",
        ])
    }

    @Test("Equal stamps go to the greater device name")
    func tiesGoToTheGreaterDeviceName() {
        let expected = ReferenceModel().replay(concurrentEdits(stampA: 110, stampB: 110).entries)
        #expect(expected.records[ID.event]?.fields["note"]?.entry == 4)
        #expect(expected.fate(of: 3, field: "note") == .lostMerge(to: 4))
    }

    @Test("A field only one side changed keeps that side's value, whatever the stamps")
    func oneSidedChangeKeepsItsValue() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0", "mood": "calm-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.update("B", "CareEvent", ID.event, ["mood": "tense-3"], stamp: 50)
        story.update("A", "CareEvent", ID.event, ["note": "a-4"], stamp: 400)
        story.send("A")
        story.send("B")
        let fields = ReferenceModel().replay(story.entries).records[ID.event]?.fields
        #expect(fields?["mood"]?.value == "tense-3")
        #expect(fields?["note"]?.value == "a-4")
    }

    @Test("Setting nil is an edit: the later clear beats an earlier value")
    func settingNilIsAnEdit() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.update("B", "CareEvent", ID.event, ["note": "b-3"], stamp: 110)
        story.update("A", "CareEvent", ID.event, ["note": nil], stamp: 120)
        story.send("B")
        story.send("A")
        let note = ReferenceModel().replay(story.entries).records[ID.event]?.fields["note"]
        #expect(note?.value == .null)
        #expect(note?.entry == 4)
    }

    @Test("A fetch merges unsent edits per field: the later keeps the field, and the send that follows carries only a winner")
    func fetchMergesUnsentEdits() {
        for (stampA, winner, loser) in [(120, 3, 4), (100, 4, 3)] {
            var story = Story(devices: ["A": "alice", "B": "alice"])
            story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 90)
            story.send("A")
            story.fetch("B")
            story.update("A", "CareEvent", ID.event, ["note": "a-3"], stamp: stampA)
            story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 110)
            story.send("B")
            story.fetch("A")
            story.send("A")
            let expected = ReferenceModel().replay(story.entries)
            #expect(expected.records[ID.event]?.fields["note"]?.entry == winner, "A's stamp \(stampA)")
            #expect(expected.fate(of: loser, field: "note") == .lostMerge(to: winner), "A's stamp \(stampA)")
            #expect(expected.fetches["A"] == [6])
        }
    }

    @Test("A switched account discards its device's queued writes; a participant's writes before accepting, or after the share stopped, are refused")
    func writesWithoutAStandingAreKeptOut() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareEvent", ID.other, ["note": "a-0"], stamp: 100)
        story.add("A", HistoryOp.accountSwitch, ["device": "A", "user": "bob"])
        story.send("A")
        story.insert("A", "CareSession", ID.session, ["title": "s-3"], stamp: 103)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.add("P", HistoryOp.insert, ["entity": "CareEvent", "uuid": .string(ID.event), "values": ["note": "p-5"], "stamp": 105,
                                          "store": "shared", "zone": ["owner": "bob", "zoneName": "Share-1"]])
        story.send("P")
        story.accept("P", owner: "bob", zoneName: "Share-1")
        story.fetch("P")
        story.add("A", HistoryOp.shareStop, ["zoneName": "Share-1"])
        story.update("P", "CareSession", ID.session, ["title": "p-10"], stamp: 110)
        story.send("P")
        let expected = ReferenceModel().replay(story.entries)
        #expect(expected.fate(of: 0, field: "note") == .discarded(at: 1, reason: "its device's account was switched"))
        #expect(expected.records[ID.other]?.exists == false)
        #expect(expected.fate(of: 5, field: "note") == .refused(send: 6))
        #expect(expected.refusals[5]?.why == "pat is pending, not accepted, on bob/Share-1")
        #expect(expected.fate(of: 10, field: "title") == .refused(send: 11))
        #expect(expected.refusals[10]?.why == "the share of bob/Share-1 was stopped")
        #expect(expected.records[ID.session]?.fields["title"]?.value == "s-3")
    }

    @Test("Delete versus edit: deleteWins by default, resurrect when the entity's policy says so")
    func deleteVersusEditFollowsThePolicy() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        story.delete("A", "CareEvent", ID.event, stamp: 120)
        story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 130)
        story.send("A")
        story.send("B")
        let deleted = ReferenceModel().replay(story.entries)
        #expect(deleted.records[ID.event]?.exists == false)
        #expect(deleted.records[ID.event]?.deletedBy == 3)
        #expect(deleted.fate(of: 4, field: "note") == .deleted(by: 3))

        let resurrected = ReferenceModel(deletePolicies: ["CareEvent": .resurrect]).replay(story.entries)
        #expect(resurrected.records[ID.event]?.exists == true)
        #expect(resurrected.records[ID.event]?.fields["note"]?.entry == 4)
    }

    @Test("An update sent to a record's old zone after a share moved it fetches: the device's next edit comes after what it fetched")
    func updateOfAMovedRecordFetches() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.insert("A", "CareEvent", ID.event, ["note": "a-1", "session": .string(ID.session)], stamp: 101)
        story.send("A", saved: 2)
        story.fetch("B")
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [])
        story.update("A", "CareSession", ID.session, ["title": "a-5"], stamp: 300)
        story.update("B", "CareEvent", ID.event, ["note": "b-6"], stamp: 200)
        story.send("A")
        let missed = story.send("B")
        // B's clock is behind: its later edit carries the earlier stamp, but B has A's title by now.
        let edit = story.update("B", "CareSession", ID.session, ["title": "b-9"], stamp: 250)
        story.send("B")
        let expected = ReferenceModel().replay(story.entries)
        #expect(expected.fetches["B"] == [3, missed])
        #expect(expected.records[ID.session]?.zone == ZoneRef(owner: "alice", zoneName: "Share-1"))
        #expect(expected.records[ID.session]?.fields["title"]?.entry == edit)
        #expect(expected.fate(of: 5, field: "title") == .overwritten(by: edit))
        #expect(expected.records[ID.event]?.fields["note"]?.entry == 6)
    }

    @Test("A participant's edit sent after the owner lowered them to readOnly is refused, and the cloud keeps the owner's value")
    func readOnlyEditIsRefused() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        story.setPermission("A", zoneName: "Share-1", user: "pat", "readOnly")
        story.update("P", "CareSession", ID.session, ["title": "p-5"], stamp: 200)
        story.send("P", saved: 0, reverted: 1)
        let expected = ReferenceModel().replay(story.entries)
        let session = expected.records[ID.session]
        #expect(session?.zone == ZoneRef(owner: "alice", zoneName: "Share-1"))
        #expect(session?.fields["title"]?.value == "s-0")
        #expect(expected.fate(of: 5, field: "title") == .refused(send: 6))
        #expect(expected.refusals[5]?.why == "pat had readOnly on alice/Share-1")
    }

    @Test("A participant who leaves with queued writes discards them; an object linked to a shared one joins its zone")
    func leavingDiscardsQueuedWrites() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        story.insert("P", "CareEvent", ID.event, ["note": "p-4", "session": .string(ID.session)], stamp: 200, store: "shared")
        story.leave("P", owner: "alice", zoneName: "Share-1")
        story.send("P", saved: 0)
        let expected = ReferenceModel().replay(story.entries)
        #expect(expected.records[ID.event]?.zone == ZoneRef(owner: "alice", zoneName: "Share-1"))
        #expect(expected.records[ID.event]?.exists == false)
        #expect(expected.fate(of: 4, field: "note") == .discarded(at: 5, reason: "P lost zone alice/Share-1"))
    }

    @Test("Sharing an event takes its session and the session's other events; deleting the root ends the share and its zone")
    func shareTakesTheWholeGraphAndItsRootEndsIt() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.insert("A", "CareEvent", ID.event, ["note": "a-1", "session": .string(ID.session)], stamp: 101)
        story.insert("A", "CareEvent", ID.other, ["note": "a-2", "session": .string(ID.session)], stamp: 102)
        story.share("A", "CareEvent", root: ID.event, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.fetch("P")
        let shared = ReferenceModel().replay(story.entries)
        let zone = ZoneRef(owner: "alice", zoneName: "Share-1")
        #expect([ID.session, ID.event, ID.other].map { shared.records[$0]?.zone } == [zone, zone, zone])
        #expect([ID.session, ID.event, ID.other].map { shared.records[$0]?.exists } == [true, true, true])
        #expect(shared.reads("pat", zone))

        story.delete("A", "CareEvent", ID.event, stamp: 200)
        story.send("A")
        let ended = ReferenceModel().replay(story.entries)
        #expect([ID.session, ID.event, ID.other].map { ended.records[$0]?.exists } == [false, false, false])
        #expect(!ended.reads("pat", zone))
    }

    @Test("An insert that names a share's zone goes there, for the owner as for a participant")
    func insertNamingAZone() {
        var story = Story(devices: ["A": "alice", "P": "pat"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.share("A", "CareSession", root: ID.session, zoneName: "Share-1", participants: [("pat", "readWrite")])
        story.accept("P", owner: "alice", zoneName: "Share-1")
        story.add("A", HistoryOp.insert, ["entity": "CareEvent", "uuid": .string(ID.event), "values": ["note": "a-3"], "stamp": 103,
                                          "zone": ["owner": "alice", "zoneName": "Share-1"]])
        story.add("P", HistoryOp.insert, ["entity": "CareEvent", "uuid": .string(ID.other), "values": ["note": "p-4"], "stamp": 104,
                                          "store": "shared", "zone": ["owner": "alice", "zoneName": "Share-1"]])
        story.send("A")
        story.send("P")
        let expected = ReferenceModel().replay(story.entries)
        let zone = ZoneRef(owner: "alice", zoneName: "Share-1")
        #expect(expected.records[ID.event]?.zone == zone)
        #expect(expected.records[ID.other]?.zone == zone)
        #expect(expected.records[ID.other]?.exists == true)
    }

    @Test("A date's text compares as the seconds the cloud holds, whatever its offset")
    func datesCompareAsSeconds() {
        #expect(JSONValue.string("2026-02-28T23:59:59.999-01:00").same(as: "2026-03-01T00:59:59.999Z"))
        #expect(JSONValue.string("2024-02-29T12:00:00Z").canonical == .double(1_709_208_000))
        #expect(JSONValue.string("1969-12-31T23:59:59.500Z").canonical == .double(-0.5))
        #expect(!JSONValue.string("2026-07-27T09:30:00.250Z").same(as: "2026-07-27T09:30:00.251Z"))
        #expect(JSONValue.string("2026-13-01T00:00:00Z").canonical == "2026-13-01T00:00:00Z")
    }

    @Test("A delete's cascade removes the related objects too, and their edits go with them")
    func cascadeDeletesRelatedObjects() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareSession", ID.session, ["title": "s-0"], stamp: 100)
        story.insert("A", "CareEvent", ID.event, ["note": "a-1", "session": .string(ID.session)], stamp: 101)
        story.send("A")
        story.fetch("B")
        story.update("B", "CareEvent", ID.event, ["note": "b-4"], stamp: 150)
        story.add("A", HistoryOp.delete, ["entity": "CareSession", "uuid": .string(ID.session), "stamp": 120],
                  outcome: .ok(["cascade": [.string(ID.event)]]))
        story.send("A")
        story.send("B", saved: 0)
        let expected = ReferenceModel().replay(story.entries)
        #expect(expected.records[ID.event]?.exists == false)
        #expect(expected.records[ID.event]?.deletedBy == 5)
        #expect(expected.fate(of: 4, field: "note") == .deleted(by: 5))
    }

    @Test("A send that left entries queued carried the front of the queue, and says so in the assumptions")
    func partialSendCarriesTheFrontOfTheQueue() {
        var story = Story(devices: ["A": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.insert("A", "CareEvent", ID.other, ["note": "a-1"], stamp: 101)
        story.send("A", saved: 1, left: 1)
        let expected = ReferenceModel().replay(story.entries)
        #expect(expected.records[ID.event]?.exists == true)
        #expect(expected.records[ID.other]?.exists == false)
        #expect(expected.fate(of: 1, field: "note") == .unsent)
        #expect(expected.assumptions.contains { $0.contains("sync.send #2 left 1 queued") })
    }

    @Test("A failed send the runner found to have saved a first batch carried the records it names")
    func failedSendWithCarriedRecords() {
        var story = Story(devices: ["A": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.insert("A", "CareEvent", ID.other, ["note": "a-1"], stamp: 101)
        story.add("A", HistoryOp.send, ["carried": [.string(ID.event)]],
                  outcome: .fail(code: "zoneBusy", message: "Injected zoneBusy for 'records.modify'. Retry after 1.0 seconds."))
        let expected = ReferenceModel().replay(story.entries)
        #expect(expected.records[ID.event]?.exists == true)
        #expect(expected.records[ID.other]?.exists == false)
    }

    @Test("A send whose answer was lost but which the cloud's log shows committed carried the queue")
    func resolvedSendCarriesTheQueue() {
        var story = Story(devices: ["A": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A", outcome: .resolved(committed: true, evidence: "request log #3: records.modify ok"))
        story.send("A", outcome: .resolved(committed: false, evidence: "request log: nothing after #3"))
        #expect(ReferenceModel().replay(story.entries).records[ID.event]?.fields["note"]?.entry == 0)
    }
}
