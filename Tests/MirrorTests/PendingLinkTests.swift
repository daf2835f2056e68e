import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// A relationship whose destination record arrives later (another page, another fetch,
    /// after a restart) is kept waiting and set when it arrives; meanwhile the object is no
    /// orphan. Another client of the owner writes the records, one fetch at a time.
    @Suite("Mirroring: relationships whose destination arrives later", .timeLimit(.minutes(5)))
    struct PendingLinkTests {
        static func session(_ name: String, id: String) -> JSONValue {
            ["recordName": .string(name), "recordType": "CD_CareSession", "zoneID": ImportRefusalTests.zone, "fields": [
                "CD_entityName": ["type": "string", "value": "CareSession"], "CD_id": ["type": "string", "value": .string(id)],
                "CD_title": ["type": "string", "value": "Vet"], "CD_isDefault": ["type": "int64", "value": 0]]]
        }

        static func event(_ name: String, session: String) -> JSONValue {
            ImportRefusalTests.event(name, ["CD_session": ["type": "string", "value": .string(session)]])
        }

        /// `record` placed in another zone (a share zone, as its owner names it).
        static func inZone(_ record: JSONValue, _ zoneName: String) -> JSONValue {
            guard case var .object(members) = record else { return record }
            members["zoneID"] = ["zoneName": .string(zoneName)]
            return .object(members)
        }

        static func waiting(_ device: Device) async throws -> [JSONValue] {
            try await device.status()["stores"]?.arrayValue?.flatMap { $0["pendingLinks"]?.arrayValue ?? [] } ?? []
        }

        @Test("An event fetched before its session waits for it, and is linked when the session arrives in a later fetch")
        func eventBeforeItsSession() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.event("late-event", session: "vet-session")]])
            try await a.fetch()
            #expect(try await a.object(id: "late-event")?["values"]?["session"] == .null)
            let waiting = try await Self.waiting(a)
            #expect(waiting.count == 1)
            #expect(waiting.first?["recordName"] == "late-event" && waiting.first?["relationship"] == "session" && waiting.first?["target"] == "vet-session")
            let doctor = try await MeowProcess.run("meowctl", ["doctor", "--socket", a.socket, "--json"])
            let findings = try JSONParser.parse(Array(doctor.stdout.utf8))["findings"]?.arrayValue ?? []
            #expect(findings.compactMap { $0["kind"]?.stringValue } == ["pendingLink"], "a waiting event is reported as waiting, not as an orphan")

            _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.session("vet-session", id: "vet")]])
            try await a.fetch()
            let vet = try await a.objectID(id: "vet", entity: "CareSession")
            #expect(try await a.object(id: "late-event")?["values"]?["session"]?.stringValue == vet)
            #expect(try await Self.waiting(a).isEmpty)
            #expect(try await a.pending() == 0, "setting a link the cloud already has queues nothing")
            await ConflictTests.stop(cloud, a)
        }

        @Test("In the shared store too: a participant fetches an event before its session; it waits, and links when the session arrives")
        func participantsEventBeforeItsSession() async throws {
            let setup = try await SharingTests.shared("readWrite")
            let (cloud, p) = (setup.cloud, setup.p)
            try await p.fetch()
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                Self.inZone(Self.event("late-event", session: "late-session"), setup.zoneName)]])
            try await p.fetch()
            let event = try #require(try await p.objects(store: "Shared", predicate: "id == 'late-event'").first)
            #expect(event["values"]?["session"] == .null)
            let waiting = try await Self.waiting(p)
            #expect(waiting.count == 1 && waiting.first?["target"] == "late-session")
            #expect(try await p.status()["stores"]?.arrayValue?.first { $0["store"] == "Shared" }?["pendingLinks"]?.arrayValue?.count == 1,
                    "the link waits in the shared store's own list")

            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                Self.inZone(Self.session("late-session", id: "late"), setup.zoneName)]])
            try await p.fetch()
            let late = try #require(try await p.objects("CareSession", store: "Shared", predicate: "id == 'late'").first?["objectID"]?.stringValue)
            #expect(try await p.objects(store: "Shared", predicate: "id == 'late-event'").first?["values"]?["session"]?.stringValue == late)
            #expect(try await Self.waiting(p).isEmpty)
            #expect(try await p.pending() == 0, "setting a link the cloud already has queues nothing")
            await ConflictTests.stop(cloud, setup.o, p)
        }

        @Test("A device restarted while an event waits for its session: the start-up orphan repair leaves it alone, and the session links it")
        func waitingEventSurvivesARestartAndTheOrphanRepair() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("device-a")
            var a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data, orphanRepair: true)
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.event("late-event", session: "vet-session")]])
            try await a.fetch()
            #expect(await a.stop() == 0)

            a = try await Device.start("A", user: "owner", cloud: cloud, dataDirectory: data, orphanRepair: true)
            #expect(try await a.object(id: "late-event")?["values"]?["session"] == .null, "the repair took a waiting event for an orphan")
            #expect(try await Self.waiting(a).count == 1)
            try await a.now()
            // Nothing was uploaded for the event: the cloud's copy still names its own session.
            let event = try await cloud.records(user: "owner").first { $0["recordName"] == "late-event" }
            #expect(event?["fields"]?["CD_session"]?["value"] == "vet-session")

            _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.session("vet-session", id: "vet")]])
            try await a.fetch()
            let vet = try await a.objectID(id: "vet", entity: "CareSession")
            #expect(try await a.object(id: "late-event")?["values"]?["session"]?.stringValue == vet)
            #expect(try await Self.waiting(a).isEmpty)
            await ConflictTests.stop(cloud, a)
        }
    }
}
