import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// A to-one field a participant writes into a share-zone record, naming one of the owner's
    /// private objects, when one of the owner's devices then saves that record: CloudKit keeps
    /// the field under the owner's modification, so nothing but the owner's device clearing it
    /// stops the owner's other devices from taking it as the owner's own link.
    @Suite("Mirroring: a participant's planted to-one under the owner's later save", .timeLimit(.minutes(5)))
    struct PlantedLinkTests {
        typealias Links = LinksAfterSharingTests
        typealias TripLog = TripLogTests

        /// The shared TripLog graph with a second owner device B that has fetched it, and a
        /// private "Secret trip" on both: its record name.
        static func start() async throws -> (Cloud, Device, Device, Device, [String: String], String, String) {
            let (cloud, o, p, ids, zone) = try await Links.shared()
            _ = try await GraphShareTests.insert(o, "Trip", ["name": "Secret trip", "currency": "EUR"])
            try await o.send()
            let secret = try #require(try await cloud.records(user: "owner", zone: Links.coreDataZone)
                .first { $0["recordType"] == "CD_Trip" }?["recordName"]?.stringValue)
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--model", TripLog.xcodeModel, "--asset-threshold", "64"])
            try await b.fetch()
            return (cloud, o, p, b, ids, zone, secret)
        }

        static func record(_ cloud: Cloud, zone: String, type: String) async throws -> JSONValue {
            try #require(try await cloud.records(user: "owner", zone: ["zoneName": .string(zone)]).first { $0["recordType"] == .string(type) })
        }

        /// The days the secret trip holds on `device`.
        static func secretDays(_ device: Device) async throws -> [JSONValue] {
            let trip = try #require(try await device.objects("Trip", predicate: "name == 'Secret trip'").first?["objectID"])
            return try await device.objects("Day").filter { $0["values"]?["trip"] == trip }
        }

        /// P's user writes into the share zone directly (as any CloudKit client can).
        static func plant(_ cloud: Cloud, zone: String, _ saves: [JSONValue], policy: String = "ifServerRecordUnchanged") async throws {
            let alice = try await cloud.connect("alice-secret")
            defer { alice.close() }
            _ = try await alice.call("records.modify", ["database": "shared", "savePolicy": .string(policy), "saves": .array(saves)])
        }

        static func text(_ value: String) -> JSONValue { ["type": "string", "value": .string(value)] }

        /// The owner stops the share and shares the trip again from `device`: the new zone holds
        /// nothing of the secret trip, and the participant sees only the shared trip.
        static func shareAgain(_ cloud: Cloud, from device: Device, stopping zone: String, secret: String, participant p: Device) async throws -> String {
            _ = try await device.call("share.stop", ["zoneName": .string(zone)])
            let trip = try #require(try await device.objects("Trip", predicate: "name == 'Kyoto in autumn'").first?["objectID"]?.stringValue)
            let again = try await device.call("share.create", ["objectID": .string(trip), "participants": [["user": "alice", "permission": "readWrite"]]])
            let newZone = try #require(again["zoneName"]?.stringValue)
            let moved = try await cloud.records(user: "owner", zone: ["zoneName": .string(newZone)])
            #expect(!moved.contains { $0["recordName"]?.stringValue == secret }, "the private trip moved into the share")
            _ = try await p.call("share.accept", ["zoneName": .string(newZone), "ownerName": "owner"])
            #expect(try await p.objects("Trip", store: "Shared").compactMap { $0["values"]?["name"]?.stringValue } == ["Kyoto in autumn"])
            return newZone
        }

        @Test("A planted to-one the owner's device refused is sent empty when that device edits the record: the owner's other device links nothing, a new share from it takes nothing private")
        func ownersEditClearsThePlantedField() async throws {
            let (cloud, o, p, b, _, zone, secret) = try await Self.start()
            let shareZone: JSONValue = ["zoneName": .string(zone), "ownerName": "owner"]
            try await Self.plant(cloud, zone: zone, [["recordName": "planted-day", "recordType": "CD_Day", "zoneID": shareZone, "fields": [
                "CD_entityName": Self.text("Day"), "CD_notes": Self.text("planted"), "CD_trip": Self.text(secret)]]])
            try await o.fetch()
            let planted = try #require(try await o.objects("Day", predicate: "notes == 'planted'").first)
            #expect(planted["values"]?["trip"] == .null)
            #expect(try await PendingLinkTests.waiting(o).compactMap { $0["target"]?.stringValue } == [secret])

            // The owner's device edits another field of the record: its update names no trip.
            try await o.set(try #require(planted["objectID"]?.stringValue), ["notes": "seen by the owner"])
            try await o.send()
            #expect(try await o.pending() == 0)
            let day = try await cloud.records(user: "owner", zone: ["zoneName": .string(zone)]).first { $0["recordName"] == "planted-day" }
            #expect(day?["lastModifiedUserRecordName"] == "owner")
            #expect(day?["fields"]?["CD_trip"] == nil, "the planted trip stayed in the record the owner last modified: \(day ?? .null)")
            #expect(try await PendingLinkTests.waiting(o).isEmpty, "the field it cleared waits no more")

            try await b.fetch()
            let onB = try #require(try await b.objects("Day", predicate: "notes == 'seen by the owner'").first)
            #expect(onB["values"]?["trip"] == .null, "the owner's other device linked the participant's day into the private trip")
            #expect(try await Self.secretDays(b).isEmpty)

            // The participant writes the day again: it still reaches nothing private.
            try await Self.plant(cloud, zone: zone, [["recordName": "planted-day", "recordType": "CD_Day", "zoneID": shareZone, "fields": [
                "CD_notes": Self.text("again")]]], policy: "changedKeys")
            try await o.fetch()
            try await b.fetch()
            #expect(try await Self.secretDays(o).isEmpty)
            #expect(try await Self.secretDays(b).isEmpty)
            #expect(try await cloud.records(user: "owner", zone: Links.coreDataZone).filter { $0["recordType"] == "CD_Day" }.isEmpty,
                    "a participant's day went into the owner's private zone")

            _ = try await Self.shareAgain(cloud, from: b, stopping: zone, secret: secret, participant: p)
            await ConflictTests.stop(cloud, o, p, b)
        }

        @Test("A planted to-one met in a conflict (the owner's device edited the record meanwhile) is merged as refused and sent empty; the owner's other device links nothing")
        func plantedFieldMetInAConflictIsCleared() async throws {
            let (cloud, o, p, b, ids, zone, secret) = try await Self.start()
            // The owner's device edits the shared day; before it sends, the participant re-parents it under the private trip.
            try await o.set(ids["Day"]!, ["distanceKm": 20.5])
            let day = try await Self.record(cloud, zone: zone, type: "CD_Day")
            let shareZone: JSONValue = ["zoneName": .string(zone), "ownerName": "owner"]
            try await Self.plant(cloud, zone: zone, [["recordName": day["recordName"] ?? .null, "recordType": "CD_Day", "zoneID": shareZone,
                                                      "fields": ["CD_trip": Self.text(secret)]]], policy: "changedKeys")
            try await o.send()
            #expect(try await o.pending() == 0)
            let merged = try await Self.record(cloud, zone: zone, type: "CD_Day")
            #expect(merged["lastModifiedUserRecordName"] == "owner")
            #expect(merged["fields"]?["CD_distanceKm"]?["value"] == 20.5, "the owner's edit was kept")
            #expect(merged["fields"]?["CD_trip"] == nil, "the planted trip stayed in the record the owner last modified: \(merged)")
            #expect(try await TripLog.values(o, "Day")["trip"] == .null)

            try await b.fetch()
            #expect(try await TripLog.values(b, "Day")["trip"] == .null, "the owner's other device put the shared day under the private trip")
            #expect(try await Self.secretDays(b).isEmpty)
            _ = try await Self.shareAgain(cloud, from: o, stopping: zone, secret: secret, participant: p)
            #expect(try await p.objects("Day", store: "Shared").isEmpty, "the day the participant moved out of the trip is not in the new share")
            await ConflictTests.stop(cloud, o, p, b)
        }
    }
}
