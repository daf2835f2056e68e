import MeowHistory
import MeowWire
import Testing

@Suite("The duplicates check catches one object twice")
struct DuplicatesCheckTests {
    func failures(_ run: RunRecord) -> [CheckFailure] { Checker().check(run) }

    @Test("duplicates: one UUID in both stores of a device and in two zones of its owner")
    func duplicateObject() {
        var story = Story(devices: ["A": "alice", "B": "alice"])
        story.insert("A", "CareEvent", ID.event, ["note": "a-0"], stamp: 100)
        story.send("A")
        story.fetch("B")
        let values = ["note": JSONValue.string("a-0")]
        let run = story.run(
            cloud: [zone("alice", [record(ID.event, "CareEvent", values)]),
                    zone("alice", "Share-8", [CloudRecordState(recordName: "cloudkit.zoneshare", recordType: "cloudkit.share", fields: [:])]),
                    zone("alice", "Share-9", [record(ID.event, "CareEvent", values),
                                              CloudRecordState(recordName: "cloudkit.zoneshare", recordType: "cloudkit.share", fields: [:])])],
            devices: [device("A", "alice", [object(ID.event, "CareEvent", values)]),
                      device("B", "alice", [object(ID.event, "CareEvent", values), object(ID.event, "CareEvent", values, store: "shared")])])
        let found = failures(run)
        #expect(found.map(\.check) == ["duplicates", "duplicates"])
        #expect(found.map(\.entries) == [[0], [0]])
        #expect(found.first?.explanation == "device B holds CareEvent 7F3A9C21… (A's insert #0) 2 times (stores: private, shared).")
        #expect(found.last?.explanation == "the cloud holds CareEvent 7F3A9C21… (A's insert #0) 2 times in alice's zones (com.apple.coredata.cloudkit.zone, Share-9).")
    }
}
