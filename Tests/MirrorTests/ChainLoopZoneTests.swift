import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// An object's zone is its to-one chain's end, and a chain that comes back to where it started
    /// skips that object: two objects whose first steps reach the same object can end in different
    /// places, so the zone one of them found is not the other's.
    @Suite("Mirroring: zones of chains through a one-to-one pair", .timeLimit(.minutes(5)))
    struct ChainLoopZoneTests {
        /// A hub's first to-one is its one-to-one partner link, then its far anchor; a link's first
        /// is its hub, then its end anchor; a visitor only points at a hub. From a link the chain
        /// goes link → hub → (link already reached) far anchor; from a visitor, visitor → hub →
        /// link → (hub already reached) end anchor.
        static let model: JSONValue = [
            "name": "Loops",
            "entities": [
                ["name": "Anchor", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "hubs", "destination": "Hub", "toMany": true, "inverse": "far"],
                                   ["name": "links", "destination": "Link", "toMany": true, "inverse": "end"]]],
                ["name": "Hub", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "partner", "destination": "Link", "inverse": "hub"],
                                   ["name": "far", "destination": "Anchor", "inverse": "hubs"],
                                   ["name": "visitors", "destination": "Visitor", "toMany": true, "inverse": "hub"]]],
                ["name": "Link", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "hub", "destination": "Hub", "inverse": "partner"],
                                   ["name": "end", "destination": "Anchor", "inverse": "links"]]],
                ["name": "Visitor", "attributes": [["name": "id", "type": "string"]],
                 "relationships": [["name": "hub", "destination": "Hub", "inverse": "visitors"]]],
            ],
            "configurations": [
                ["name": "Private", "scope": "private", "entities": ["Anchor", "Hub", "Link", "Visitor"]],
                ["name": "Shared", "scope": "shared", "entities": ["Anchor", "Hub", "Link", "Visitor"]],
            ],
        ]

        /// `visitorFirst`: the visitor is queued before the link, so the visitor's zone is worked
        /// out first; otherwise the link's is.
        @Test("A link and a visitor of the same hub, sent together, each land in their own chain end's zone (a share, Core Data's zone)",
              arguments: [false, true])
        func objectsSharingAFirstStepEndApart(visitorFirst: Bool) async throws {
            let cloud = try await Cloud.start()
            let path = cloud.directory.file("loops.json")
            try JSONWriter.text(Self.model).write(toFile: path, atomically: true, encoding: .utf8)
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", path])
            let shared = try await GraphShareTests.insert(o, "Anchor", ["id": "shared"])
            let local = try await GraphShareTests.insert(o, "Anchor", ["id": "local"])
            try await o.send()
            let zone = try await o.share(shared)

            // One send: the link's chain ends at the shared anchor; the visitor's first step
            // reaches the same hub, but its chain ends at the local anchor.
            let hub = try await GraphShareTests.insert(o, "Hub", ["id": "hub", "far": .string(shared)])
            if visitorFirst { _ = try await GraphShareTests.insert(o, "Visitor", ["id": "visitor", "hub": .string(hub)]) }
            _ = try await GraphShareTests.insert(o, "Link", ["id": "link", "hub": .string(hub), "end": .string(local)])
            if !visitorFirst { _ = try await GraphShareTests.insert(o, "Visitor", ["id": "visitor", "hub": .string(hub)]) }
            try await o.send()

            #expect(try await GraphShareTests.ids(cloud, zone: zone) == ["link", "shared"])
            let coreData = try await cloud.records(user: "owner").compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue }.sorted()
            #expect(coreData == ["hub", "local", "visitor"])
            await ConflictTests.stop(cloud, o)
        }
    }
}
