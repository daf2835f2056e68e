import MeowWire
import Testing
@testable import StoreServiceKit

extension Mirroring {
    /// The per-field merge rule (SEMANTICS C5) on its own, apart from the processes that use it.
    @Suite("Mirroring: the per-field merge rule")
    struct MergeRuleTests {
        static func field(_ text: String) -> JSONValue { ["type": "string", "value": .string(text)] }
        let early = FieldStamp(time: 100, device: "A")
        let late = FieldStamp(time: 200, device: "A")

        @Test("A field only one side changed keeps that side's value; the other side's change survives too")
        func oneSideEach() {
            let ancestor = ["CD_note": Self.field("a"), "CD_title": Self.field("t")]
            let server = ["CD_note": Self.field("server"), "CD_title": Self.field("t")]
            let client = ["CD_note": Self.field("a"), "CD_title": Self.field("client")]
            let outcome = MirrorMerge(policy: .latestEdit).merge(server: server, serverTimes: [:], client: client, clientTimes: [:],
                                                                 ancestor: ancestor, localChanged: ["CD_title"])
            #expect(outcome.fields == ["CD_note": Self.field("server"), "CD_title": Self.field("client")])
            #expect(outcome.clientWon)
        }

        @Test("Both changed: latestEdit takes the later stamp, ties go to the greater device name; policies override")
        func bothChanged() {
            let ancestor = ["CD_note": Self.field("a")]
            let server = ["CD_note": Self.field("server")]
            let client = ["CD_note": Self.field("client")]
            func run(_ policy: MirrorConflictPolicy, server serverStamp: FieldStamp, client clientStamp: FieldStamp) -> JSONValue? {
                MirrorMerge(policy: policy).merge(server: server, serverTimes: ["CD_note": serverStamp], client: client,
                                                  clientTimes: ["CD_note": clientStamp], ancestor: ancestor, localChanged: ["CD_note"]).fields["CD_note"]
            }
            #expect(run(.latestEdit, server: early, client: late) == Self.field("client"))
            #expect(run(.latestEdit, server: late, client: early) == Self.field("server"))
            #expect(run(.latestEdit, server: FieldStamp(time: 100, device: "B"), client: FieldStamp(time: 100, device: "A")) == Self.field("server"))
            #expect(run(.latestEdit, server: FieldStamp(time: 100, device: "A"), client: FieldStamp(time: 100, device: "B")) == Self.field("client"))
            #expect(run(.serverWins, server: early, client: late) == Self.field("server"))
            #expect(run(.clientWins, server: late, client: early) == Self.field("client"))
        }

        @Test("Setting nil is an edit: a later nil removes the field")
        func nilIsAnEdit() {
            let outcome = MirrorMerge(policy: .latestEdit).merge(
                server: ["CD_note": Self.field("server")], serverTimes: ["CD_note": early],
                client: [:], clientTimes: ["CD_note": late], ancestor: ["CD_note": Self.field("a")], localChanged: ["CD_note"])
            #expect(outcome.fields["CD_note"] == nil)
            #expect(outcome.clientWon)
        }

        @Test("A field the client did not edit never overrides the server, even when it differs")
        func untouchedFieldsFollowTheServer() {
            let outcome = MirrorMerge(policy: .clientWins).merge(
                server: ["CD_note": Self.field("server")], serverTimes: [:], client: ["CD_note": Self.field("stale")], clientTimes: [:],
                ancestor: ["CD_note": Self.field("stale")], localChanged: [])
            #expect(outcome.fields["CD_note"] == Self.field("server"))
            #expect(!outcome.clientWon)
        }

        @Test("Numbers compare by value: 250.0 sent and 250 read back are one value")
        func numbersCompareByValue() {
            let sent: [String: JSONValue] = ["CD_value": ["type": "double", "value": .double(250)]]
            let read: [String: JSONValue] = ["CD_value": ["type": "double", "value": .int(250)]]
            #expect(MirrorRecordCoding.dataFields(sent) == MirrorRecordCoding.dataFields(read))
        }
    }
}
