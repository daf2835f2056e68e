import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// A one-to-one relationship with an inverse crosses the cloud with both sides, and a share
    /// takes the pair: each side's record names the other (`CD_<name>` as a record name).
    @Suite("Mirroring: one-to-one relationships", .timeLimit(.minutes(5)))
    struct OneToOneSyncTests {
        static let model: JSONValue = [
            "name": "Pairs",
            "entities": [
                ["name": "Person", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "passport", "destination": "Passport", "inverse": "owner"]]],
                ["name": "Passport", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "owner", "destination": "Person", "inverse": "passport"]]],
            ],
            "configurations": [["name": "Private", "scope": "private", "entities": ["Person", "Passport"]],
                               ["name": "Shared", "scope": "shared", "entities": ["Person", "Passport"]]],
        ]

        @Test("A pair made on one device is a pair on another; re-pairing there frees the old partner here; sharing one side takes both")
        func pairsCrossTheCloud() async throws {
            let cloud = try await Cloud.start()
            let path = cloud.directory.file("pairs.json")
            try JSONWriter.text(Self.model).write(toFile: path, atomically: true, encoding: .utf8)
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--model", path])
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--model", path])
            let ann = try await GraphShareTests.insert(a, "Person", ["id": "ann"])
            _ = try await GraphShareTests.insert(a, "Passport", ["id": "x1", "owner": .string(ann)])
            try await a.send()
            try await b.fetch()
            let passportOnB = try await b.objectID(id: "x1", entity: "Passport")
            #expect(try await b.object(id: "ann", entity: "Person")?["values"]?["passport"] == .string(passportOnB))

            _ = try await GraphShareTests.insert(b, "Person", ["id": "bob", "passport": .string(passportOnB)])
            try await b.send()
            try await a.fetch()
            #expect(try await a.object(id: "ann", entity: "Person")?["values"]?["passport"] == .null, "Ann's side was freed")
            let bob = try await a.objectID(id: "bob", entity: "Person")
            #expect(try await a.object(id: "x1", entity: "Passport")?["values"]?["owner"] == .string(bob))

            let zone = try await a.share(bob)
            #expect(try await GraphShareTests.ids(cloud, zone: zone) == ["bob", "x1"], "the share took the pair and nothing else")
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
