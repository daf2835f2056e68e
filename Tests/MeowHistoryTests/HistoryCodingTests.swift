import MeowHistory
import MeowWire
import Testing

@Suite("History entries as JSON lines")
struct HistoryCodingTests {
    @Test("Each outcome kind reads back as itself, and an unknown kind names the valid ones")
    func outcomesRoundTrip() throws {
        let outcomes: [Outcome] = [.ok(.object(["zoneName": .string("z1")])), .fail(code: "permissionFailure", message: "no"),
                                   .unknown(reason: "device A was killed"), .resolved(committed: true, evidence: "request log #4")]
        for outcome in outcomes {
            let entry = HistoryEntry(run: 1, index: 0, actor: "A", op: HistoryOp.send, invoke: 0, complete: 1, outcome: outcome)
            let bytes = try JSONTextEncoder().bytes(entry)
            #expect(try JSONValueDecoder().decode(HistoryEntry.self, from: bytes) == entry)
        }
        let bad = #"{"run":1,"index":0,"actor":"A","op":"sync.send","params":{},"invoke":0,"outcome":{"kind":"maybe"},"cloudRequests":[]}"#
        #expect(throws: (any Error).self) { try JSONValueDecoder().decode(HistoryEntry.self, from: Array(bad.utf8)) }
        #expect(Outcome.unknown(reason: "timeout").tookEffect == nil)
        #expect(Outcome.resolved(committed: false, evidence: "absent").tookEffect == false)
    }
}
