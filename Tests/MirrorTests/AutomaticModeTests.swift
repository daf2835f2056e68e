import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    @Suite("Mirroring: automatic mode", .timeLimit(.minutes(3)))
    struct AutomaticModeTests {
        /// Polls `body` until it is true or `seconds` pass (automatic mode has no explicit step to wait on).
        static func eventually(_ seconds: Double = 20, _ body: () async throws -> Bool) async throws -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if try await body() { return true }
                try await Task.sleep(for: .milliseconds(100))
            }
            return try await body()
        }

        @Test("Automatic mode: A's save reaches B with no sync op, and B's edit comes back to A")
        func automaticRoundTrip() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--sync-mode", "automatic"])
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--sync-mode", "automatic"])
            #expect(try await a.status()["mode"] == "automatic")
            try await a.insertEvents(["auto-1"])
            #expect(try await Self.eventually { try await b.ids() == ["auto-1"] })
            let onB = try #require(try await b.object(id: "auto-1")?["objectID"]?.stringValue)
            try await b.set(onB, ["note": "from B"])
            #expect(try await Self.eventually { try await a.object(id: "auto-1")?["values"]?["note"] == "from B" })
            #expect(try await Self.eventually {
                let quietA = try await a.status()["quiescent"] == true
                let quietB = try await b.status()["quiescent"] == true
                return quietA && quietB
            })
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }

        @Test("Automatic mode: a pass a local save starts only sends; the cloud pushes the change to B, not back to A, so A does not fetch its own records")
        func automaticSendDoesNotFetchItsOwnRecordsBack() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--sync-mode", "automatic"])
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--sync-mode", "automatic"])
            try await a.insertEvents(["mine-1", "mine-2"])
            #expect(try await Self.eventually { try await Set(b.ids()) == ["mine-1", "mine-2"] })
            #expect(try await Self.eventually { try await a.status()["quiescent"] == true })
            let log = try await cloud.admin("admin.requestLog", ["limit": 1000])["entries"]?.arrayValue ?? []
            // A's connection is the one that saved the records; B's fetched them.
            let save = try #require(log.first { $0["op"] == "records.modify" })
            #expect(save["client"] == "store-service mirror (A)", "the log names the device whose mirror made the request")
            let aConnection = save["connection"], savedSeq = try #require(save["seq"]?.intValue)
            let saved = try #require(save["time"]?.doubleValue)
            let after = log.filter { ($0["seq"]?.intValue ?? 0) > savedSeq && $0["op"] == "changes.fetchZone" }
            // Within 4 s of the save (A also fetches every 5 s, in case a push is lost).
            let aFetches = after.filter { $0["connection"] == aConnection && ($0["time"]?.doubleValue ?? 0) < saved + 4 }
            // (Requests are logged as they finish: B's fetch on the push can be logged before the
            // save that caused it, so B's fetches are looked for in the whole log.)
            let otherFetches = log.filter { $0["connection"] != aConnection && $0["op"] == "changes.fetchZone" }
            #expect(aFetches.isEmpty, "A fetched after its own save: \(aFetches)")
            #expect(!otherFetches.isEmpty, "B fetched")
            _ = await a.stop()
            _ = await b.stop()
            await cloud.stop()
        }
    }
}
