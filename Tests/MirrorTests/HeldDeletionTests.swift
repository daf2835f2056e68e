import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// A fetch that reads the zones while another device moves records between them.
    @Suite("Mirroring: a fetch overlapping another device's move", .timeLimit(.minutes(5)))
    struct HeldDeletionTests {
        static let coreDataZone = "com.apple.coredata.cloudkit.zone"

        /// The held-deletion loss (found by forcing share.create's root-first path on the
        /// model-checked moves variant), made exact. B's fetch reads the database's changed
        /// zones one after another, in rounds. Each of its reads of the core-data zone is held at
        /// the server while A changes that zone, so every round finds something new and the
        /// fetch uses all its rounds. During the last round's read A shares the session: the
        /// session and its events move into a new share zone that the round's list of changed
        /// zones, taken before the move, does not name. The round therefore sees the move's
        /// deletions in the core-data zone and not its new copies. Applying the held deletions
        /// when the rounds ran out deleted the session and its events on B (its own delete of
        /// `x` is held with them). Now they stay held until a fetch whose last round found
        /// nothing new: the next fetch brings the moved copies, and only `x` is deleted.
        @Test("A fetch whose rounds run out while another device moves a session keeps the moved records")
        func aFetchWhoseRoundsRunOutDuringAMoveDeletesNothingMoved() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let session = try await a.insertSession("one")
            let events = try await a.insertEvents(["e1", "e2", "e3", "x"], session: session)
            try await a.send()
            try await a.fetch()
            try await b.fetch()
            #expect(try await b.ids() == ["e1", "e2", "e3", "x"])
            // A change in the core-data zone that B's first round reads: a deletion it holds.
            try await a.delete(events[3])
            try await a.send()

            func holdNextRead() async throws {
                _ = try await cloud.admin("admin.injectFault", ["effect": "hold", "op": "changes.fetchZone", "user": "owner",
                                                               "zone": .string(Self.coreDataZone), "count": 1])
            }
            try await holdNextRead()
            let fetching = Task { () throws -> JSONValue in
                let client = try WireClient(socketPath: b.socket)
                defer { client.close() }
                try await client.hello(client: "held-fetch")
                return try await client.call("sync.fetch", [:])
            }
            var zoneName = ""
            for round in 1...3 {
                #expect(try await cloud.admin("admin.awaitHeldRequests", [:])["held"] == 1, "round \(round)")
                if round < 3 {
                    // The zone changes after the round listed it: the next round lists it again.
                    try await a.set(events[round - 1], ["note": .string("edit \(round)")])
                    try await a.send()
                    try await holdNextRead()
                } else {
                    zoneName = try await a.share(session)
                }
                #expect(try await cloud.admin("admin.releaseHeldRequests", [:])["released"] == 1, "round \(round)")
            }
            let report = try await fetching.value
            #expect(report["deletedRecords"]?.intValue == 0, "the fetch deleted records: \(report)")
            #expect(try await b.ids("CareSession") == ["one"], "B lost the session A moved")
            #expect(try await b.ids() == ["e1", "e2", "e3", "x"], "B lost events A moved")
            let held = try await b.status()["stores"]?.arrayValue?.reduce(0) { $0 + ($1["tombstonesHeld"]?.intValue ?? 0) }
            #expect(held ?? 0 > 0, "the deletions the last round saw are held")
            #expect(try await b.status()["quiescent"] == false)

            // The next fetch sees the share zone: the moved records stay, x goes.
            try await b.fetch()
            #expect(try await b.ids() == ["e1", "e2", "e3"])
            #expect(try await b.ids("CareSession") == ["one"])
            #expect(try await b.object(id: "e2")?["values"]?["note"]?.stringValue == "edit 2")
            #expect(try await b.status()["quiescent"] == true)
            try await b.send()
            try await a.fetch()
            #expect(try await a.ids() == ["e1", "e2", "e3"])
            #expect(try await cloud.eventIDs(zoneName: zoneName) == ["e1", "e2", "e3"])
            #expect(try await cloud.eventIDs(zoneName: Self.coreDataZone).isEmpty)
            await ConflictTests.stop(cloud, a, b)
        }

        /// A fetch that reads a whole move (the share zone's new copies, then the core-data
        /// zone's deletions) holds deletions of records it already has in their new zone: they
        /// delete nothing however long they wait, so no second round asks for the databases'
        /// changes again. A deletion of a record still in its zone keeps the second round.
        @Test("A fetch that sees a move whole asks for each database's changes once; a real deletion takes a second round")
        func aFetchThatSeesAMoveWholeAsksOnce() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let session = try await a.insertSession("one")
            let events = try await a.insertEvents(["e1", "e2", "x"], session: nil)
            _ = try await a.insertEvents(["s1"], session: session)
            try await a.send()
            try await b.fetch()
            #expect(try await b.ids() == ["e1", "e2", "s1", "x"])

            func databaseFetches(during body: () async throws -> JSONValue) async throws -> (report: JSONValue, asked: [String]) {
                let before = try await cloud.admin("admin.requestLog", ["form": "entries", "after": 0, "limit": 10_000])["entries"]?.arrayValue?
                    .last?["seq"]?.intValue ?? 0
                let report = try await body()
                let entries = try await cloud.admin("admin.requestLog", ["form": "entries", "after": .int(before), "limit": 10_000])["entries"]?.arrayValue ?? []
                return (report, entries.filter { $0["client"] == "store-service mirror (B)" && $0["op"] == "changes.fetchDatabase" }
                    .compactMap { $0["database"]?.stringValue })
            }

            _ = try await a.share(session)
            let moved = try await databaseFetches { try await b.fetch() }
            #expect(moved.report["deletedRecords"]?.intValue == 0, "\(moved.report)")
            #expect(moved.asked == ["private", "shared"], "a fetch that saw the move whole asked again: \(moved.asked)")
            #expect(try await b.ids("CareSession") == ["one"])
            #expect(try await b.ids() == ["e1", "e2", "s1", "x"])
            #expect(try await b.status()["quiescent"] == true, "the moved records' deletions are applied, none held")

            try await a.delete(events[2])
            try await a.send()
            let deleted = try await databaseFetches { try await b.fetch() }
            #expect(deleted.report["deletedRecords"]?.intValue == 1, "\(deleted.report)")
            #expect(deleted.asked == ["private", "private", "shared"], "\(deleted.asked)")
            #expect(try await b.ids() == ["e1", "e2", "s1"])
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
