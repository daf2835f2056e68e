import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Records near the cloud's 1 MB limit: a zone of twenty was one 18 MB change page, over
    /// the 16 MiB frame limit, and every fetch of the zone failed with frameTooLarge.
    @Suite("Mirroring: zones of large records", .timeLimit(.minutes(5)))
    struct LargeRecordTests {
        @Test("A zone of twenty 0.9 MB records arrives whole on a device, in pages under the frame limit")
        func largeRecordsArriveInPages() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            let note = String(repeating: "n", count: 900_000)
            let ids = (0..<20).map { "large-\($0 < 10 ? "0" : "")\($0)" }
            for pair in stride(from: 0, to: ids.count, by: 2) {
                _ = try await writer.call("records.modify", ["database": "private", "reply": "tags", "saves": .array(ids[pair...(pair + 1)].map {
                    ImportRefusalTests.event($0, ["CD_note": ["type": "string", "value": .string(note)]])
                })])
            }
            let fetched = try await a.fetch()
            #expect(fetched["changedRecords"] == 20)
            #expect((fetched["pages"]?.intValue ?? 0) >= 3)
            // One object a request: all twenty in one reply would be over the frame limit too.
            for id in ids {
                #expect(try await a.object(id: id)?["values"]?["note"]?.stringValue?.utf8.count == 900_000, "\(id)")
            }
            await ConflictTests.stop(cloud, a)
        }
    }
}
