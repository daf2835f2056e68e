import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// A record another device moved (sharing its session) merged with this device's copy,
    /// which the move deleted.
    @Suite("Mirroring: merging a moved copy with the copy its move deleted", .timeLimit(.minutes(5)))
    struct MovedCopyMergeTests {
        /// Seed 359 of the explorer's correct flow, made exact. share.create saves the session's
        /// records where they are (their tags move on) and then moves them, the receipt naming
        /// the new tags. B missed that save (its push was lost), so it still holds the event at
        /// the older tag, and its clock is 30 s behind A's. B edits the event's note, a field
        /// the move did not change: the moved copy holds it exactly as B last fetched it. B's
        /// edit must stand, although A's stamp on the note is the later by the clocks.
        @Test("An edit of a field the move did not change survives a moved copy with a later stamp")
        func editOfAFieldTheMoveDidNotChange() async throws {
            let (cloud, a, b, session) = try await SharingTests.ownersTwoDevicesWithASession()
            try await a.set(try await a.objectID(id: "bg-1"), ["note": "from A"])
            try await a.send()
            try await b.fetch()
            let zoneName = try await a.share(session)
            // B has not fetched the share: it holds bg-1 at the tag before share.create's save.
            _ = try await b.call("clock.set", ["advanceSeconds": -30])
            try await b.set(try await b.objectID(id: "bg-1"), ["note": "edited on B"])
            try await b.send()
            try await b.fetch()
            try await b.send()
            try await a.fetch()
            for device in [a, b] {
                #expect(try await device.object(id: "bg-1")?["values"]?["note"] == "edited on B", "on \(device.name)")
                #expect(try await device.pending() == 0, "on \(device.name)")
            }
            #expect(try await cloud.eventField("CD_note", of: "bg-1", zoneName: zoneName) == "edited on B")
            await ConflictTests.stop(cloud, a, b)
        }

        /// The other side of the rule: a field the moved copy holds otherwise than B last
        /// fetched it was changed by the mover too, and the conflict policy decides (here the
        /// later edit by stamp, A's). B's note, which A did not change, is kept beside it.
        @Test("A field both the mover and the device changed is still decided by the latest edit")
        func fieldBothChangedIsDecidedByThePolicy() async throws {
            let (cloud, a, b, session) = try await SharingTests.ownersTwoDevicesWithASession()
            try await a.set(try await a.objectID(id: "bg-1"), ["note": "from A"])
            try await a.send()
            try await b.fetch()
            // A retitles the session and shares it (share.create sends the title first); B,
            // which fetches neither, retitles it too, earlier by its clock, and edits the note.
            _ = try await b.call("clock.set", ["advanceSeconds": -30])
            try await b.set(try await b.objectID(id: "mochi", entity: "CareSession"), ["title": "B's title"])
            try await b.set(try await b.objectID(id: "bg-1"), ["note": "edited on B"])
            try await a.set(session, ["title": "A's title"])
            let zoneName = try await a.share(session)
            try await b.send()
            try await b.fetch()
            try await b.send()
            try await a.fetch()
            for device in [a, b] {
                #expect(try await device.object(id: "mochi", entity: "CareSession")?["values"]?["title"] == "A's title", "on \(device.name)")
                #expect(try await device.object(id: "bg-1")?["values"]?["note"] == "edited on B", "on \(device.name)")
            }
            #expect(try await cloud.eventField("CD_note", of: "bg-1", zoneName: zoneName) == "edited on B")
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
