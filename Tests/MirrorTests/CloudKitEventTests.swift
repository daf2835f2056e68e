import CloudWire
import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// NSPersistentCloudKitContainer.Event as the device's clients see it (`cloudKitEvents`).
    @Suite("Mirroring: setup, import and export events", .timeLimit(.minutes(5)))
    struct CloudKitEventTests {
        /// The next `count` eventChanged notices, in the order they came.
        static func next(_ count: Int, from events: inout AsyncStream<WireEvent>.Iterator) async -> [JSONValue] {
            var notices: [JSONValue] = []
            while notices.count < count, let event = await events.next() {
                if event.name == "eventChanged" { notices.append(event.data) }
            }
            return notices
        }

        /// Apps show sync state from these events (`eventChangedNotification`): each setup,
        /// import and export starts (no end date) and ends (same identifier, an end date,
        /// succeeded or the error) per store. A store with nothing to send has no export event.
        @Test("Each store's setup, import and export start and end as NSPersistentCloudKitContainer.Event; a failed export ends with its error")
        func eventsStartAndEndPerStore() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let watcher = try WireClient(socketPath: a.socket)
            defer { watcher.close() }
            try await watcher.hello(client: "events")
            #expect(try await watcher.call("subscribe", ["topics": ["cloudKitEvents"]])["topics"]?.arrayValue?.contains("cloudKitEvents") == true)
            var events = watcher.events.makeAsyncIterator()
            let storeIDs = Dictionary(uniqueKeysWithValues: (try await a.call("store.list")["stores"]?.arrayValue ?? []).compactMap { store in
                store["name"]?.stringValue.flatMap { name in store["storeUUID"]?.stringValue.map { (name, $0) } }
            })

            try await a.insertEvents(["e1"])
            #expect(try await a.send()["saved"] == 1)
            // Connecting: a setup per store; then one export, of the store with something to send.
            let sent = await Self.next(6, from: &events)
            #expect(sent.map { "\($0["type"]?.stringValue ?? "") \($0["store"]?.stringValue ?? "") \($0["endDate"] == .null ? "start" : "end")" } == [
                "setup Private start", "setup Shared start", "setup Private end", "setup Shared end", "export Private start", "export Private end"])
            let (exportStart, exportEnd) = (sent[4], sent[5])
            #expect(exportStart["identifier"] == exportEnd["identifier"])
            #expect(exportStart["succeeded"] == false && exportEnd["succeeded"] == true)
            #expect(exportEnd["error"] == .null)
            #expect(exportEnd["storeIdentifier"]?.stringValue == storeIDs["Private"])
            #expect((exportEnd["endDate"]?.stringValue ?? "") >= (exportStart["startDate"]?.stringValue ?? "~"))

            try await a.fetch()
            let fetched = await Self.next(4, from: &events)
            #expect(fetched.map { "\($0["type"]?.stringValue ?? "") \($0["store"]?.stringValue ?? "") \($0["endDate"] == .null ? "start" : "end")" } == [
                "import Private start", "import Private end", "import Shared start", "import Shared end"])
            #expect(fetched.allSatisfy { $0["endDate"] == .null || $0["succeeded"] == true })

            // The server turns the next batch away: the export ends unsucceeded, with the error.
            _ = try await cloud.admin("admin.injectFault", ["code": "serviceUnavailable", "op": "records.modify", "retryAfterSeconds": 0.01])
            try await a.insertEvents(["e2"])
            let refused = try await a.failure("sync.send")
            #expect(refused.code == .serviceUnavailable)
            let failed = await Self.next(2, from: &events)
            #expect(failed.map { $0["type"]?.stringValue } == ["export", "export"])
            #expect(failed.last?["succeeded"] == false)
            #expect(failed.last?["error"]?["code"] == "serviceUnavailable")
            await ConflictTests.stop(cloud, a)
        }

        /// A sync-service that cannot be reached fails each store's setup with the connection's
        /// error; the export never began, so it is no event of its own.
        @Test("With the cloud down, each store's setup ends unsucceeded with the connection's error, and no export event follows")
        func setupFailsWhenTheCloudIsDown() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            await cloud.stop()
            let watcher = try WireClient(socketPath: a.socket)
            defer { watcher.close() }
            try await watcher.hello(client: "events")
            _ = try await watcher.call("subscribe", ["topics": ["cloudKitEvents"]])
            var events = watcher.events.makeAsyncIterator()
            try await a.insertEvents(["offline"])
            let refused = try await a.failure("sync.send")
            let setup = await Self.next(4, from: &events)
            #expect(setup.map { "\($0["type"]?.stringValue ?? "") \($0["store"]?.stringValue ?? "") \($0["endDate"] == .null ? "start" : "end")" } == [
                "setup Private start", "setup Shared start", "setup Private end", "setup Shared end"])
            #expect(setup.suffix(2).allSatisfy { $0["succeeded"] == false && $0["error"]?["code"]?.stringValue == refused.code.rawValue })
            // The next event is the next attempt's setup, not an export of the failed one.
            _ = try? await a.call("sync.fetch")
            #expect(await Self.next(1, from: &events).first?["type"] == "setup")
            _ = await a.stop()
        }
    }
}
