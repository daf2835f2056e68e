import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Two of the owner's devices move one event at once, each into another zone.
    @Suite("Mirroring: two devices moving one record at once", .timeLimit(.minutes(5)))
    struct MoveRaceTests {
        /// Seed 878 of the automatic moves variant, made exact. A moves event bg-1 from the
        /// core-data zone into session "two" (share zone Y), B into session "three" (zone Z),
        /// B's edit the later. A's move first saves the event where it is (its tag moves on),
        /// then is held at the server. B's save where it is then fails (serverRecordChanged):
        /// B merges (its session, the later edit, wins) and, saving again where it is at the
        /// new tag, used to move at once: A's held move then created a second copy in Y, and
        /// the event lived in two zones. Now B, seeing that the server's copy belongs in another
        /// zone (another device is moving it), leaves its move to a later send, after A's move
        /// has arrived: the event then moves once more, from Y into Z, and one copy is left.
        @Test("A record two devices move into different zones at once ends in one zone, the later edit's")
        func twoDevicesMovingOneEventIntoDifferentZones() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let one = try await a.insertSession("one")
            try await a.insertEvents(["bg-1", "bg-2"], session: one)
            let two = try await a.insertSession("two", title: "Two")
            let three = try await a.insertSession("three", title: "Three")
            try await a.send()
            let zoneY = try await a.share(two)
            let zoneZ = try await a.share(three)
            try await b.fetch()
            try await a.set(try await a.objectID(id: "bg-1"), ["session": .string(two)])
            try await b.set(try await b.objectID(id: "bg-1"), ["session": .string(try await b.objectID(id: "three", entity: "CareSession"))])
            // A's move (its records.modify saving the event into Y) is held; B sends meanwhile.
            let sent = try await cloud.whileHeld("records.modify", zone: zoneY, recordType: "CD_CareEvent", device: a, op: "sync.send") {
                try await b.send()
                // B's move waits (its save where it is met A's): nothing of B's is in Z yet.
                #expect(try await b.pending() == 1)
                #expect(try await cloud.eventIDs(zoneName: zoneZ).isEmpty)
            }
            _ = try sent.get()
            for _ in 0..<2 {
                for device in [b, a] {
                    try await device.fetch()
                    try await device.send()
                }
            }
            #expect(try await cloud.eventIDs(zoneName: zoneZ) == ["bg-1"])
            #expect(try await cloud.eventIDs(zoneName: zoneY).isEmpty, "a second copy was left in the zone A moved it to")
            #expect(try await cloud.eventIDs(zoneName: "com.apple.coredata.cloudkit.zone") == ["bg-2"])
            for device in [a, b] {
                let session = try await device.object(id: "bg-1")?["values"]?["session"]?.stringValue
                #expect(session == (try await device.objectID(id: "three", entity: "CareSession")), "on \(device.name)")
                #expect(try await device.pending() == 0, "on \(device.name)")
            }
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
