import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// A device restarted with a newer model version migrates its stores as Core Data's
    /// lightweight migration does, or refuses a change it cannot infer and leaves them as they were.
    @Suite("Mirroring: model versions on a restarted device", .timeLimit(.minutes(5)))
    struct ModelMigrationTests {
        /// The travel model (GraphShareTests) with `change` applied to its entity list.
        static func version(_ name: String, in cloud: Cloud, _ change: (inout [JSONValue]) -> Void) throws -> String {
            guard case var .object(root) = GraphShareTests.model, case var .array(entities) = root["entities"] else { throw TestFailure("model") }
            change(&entities)
            root["entities"] = .array(entities)
            // Both stores hold every entity, new ones included.
            let names = JSONValue.array(entities.compactMap { $0["name"] })
            root["configurations"] = [["name": "Private", "scope": "private", "entities": names], ["name": "Shared", "scope": "shared", "entities": names]]
            let path = cloud.directory.file("\(name).json")
            try JSONWriter.text(.object(root)).write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// Applies `change` to the members of the entity `name`.
        static func edit(_ entities: inout [JSONValue], _ name: String, _ change: (inout [String: JSONValue]) -> Void) {
            for (index, entity) in entities.enumerated() where entity["name"]?.stringValue == name {
                guard case var .object(members) = entity else { continue }
                change(&members)
                entities[index] = .object(members)
            }
        }

        /// Version 2: Trip gains a mandatory `title` with a default; Day's `id` is renamed
        /// `label`; a new entity Note.
        static func version2(_ cloud: Cloud) throws -> String {
            try version("v2", in: cloud) { entities in
                edit(&entities, "Trip") { $0["attributes"] = [["name": "id", "type": "string"],
                                                              ["name": "title", "type": "string", "optional": false, "defaultValue": "Untitled"]] }
                edit(&entities, "Day") { $0["attributes"] = [["name": "label", "type": "string", "renamingIdentifier": "id"]] }
                entities.append(["name": "Note", "attributes": [["name": "id", "type": "string"], ["name": "text", "type": "string"]]])
            }
        }

        /// The store-service's arguments for device O on `directory`; `mirrored`: with its cloud.
        static func arguments(_ cloud: Cloud, directory: String, model: String, mirrored: Bool = true) -> [String] {
            ["--socket", cloud.directory.file("O.sock"), "--data-dir", directory, "--model", model, "--device-name", "O", "--no-orphan-repair"]
                + (mirrored ? ["--sync-socket", cloud.socket, "--sync-credential", "owner-secret"] : [])
        }

        @Test("A newer version's added, defaulted and renamed properties migrate the stores; the migrated objects sync")
        func lightweightMigrationKeepsDataAndSyncs() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("o-data")
            let path = cloud.directory.file("v1.json")
            try JSONWriter.text(GraphShareTests.model).write(toFile: path, atomically: true, encoding: .utf8)
            var o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", path], dataDirectory: data)
            _ = try await GraphShareTests.trip(on: o)
            _ = await o.stop()

            o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", try Self.version2(cloud)], dataDirectory: data)
            let trip = try #require(try await o.objects("Trip").first)
            #expect(trip["values"]?["title"] == "Untitled", "existing rows get the new attribute's default")
            let labels = try await o.call("fetch", ["entity": "Day", "sortDescriptors": [["key": "label", "ascending": true]]])["objects"]?
                .arrayValue?.compactMap { $0["values"]?["label"]?.stringValue }
            #expect(labels == ["d1", "d2"], "the renamed attribute keeps its values")
            #expect(try await o.objects("Photo").count == 3)
            try await o.set(try #require(trip["objectID"]?.stringValue), ["title": "Kyoto"])
            try await o.send()
            let record = try #require(try await cloud.records(user: "owner").first { $0["recordType"] == "CD_Trip" })
            #expect(record["fields"]?["CD_title"]?["value"] == "Kyoto")
            _ = try await GraphShareTests.insert(o, "Note", ["text": "new entity"])
            #expect(try await o.objects("Note").count == 1)
            await ConflictTests.stop(cloud, o)
        }

        @Test("A device upgraded to a newer version does not receive the values of fields it skipped while older; the next change of the record brings them")
        func skippedFieldsArriveWithTheRecordsNextChange() async throws {
            let cloud = try await Cloud.start()
            let v1 = cloud.directory.file("v1.json")
            try JSONWriter.text(GraphShareTests.model).write(toFile: v1, atomically: true, encoding: .utf8)
            let v2 = try Self.version2(cloud)
            let old = cloud.directory.file("o-data")
            var o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", v1], dataDirectory: old)
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--model", v2])
            let trip = try await GraphShareTests.insert(b, "Trip", ["id": "t1", "title": "Kyoto"])
            try await b.send()
            try await o.fetch()
            #expect(try await o.objects("Trip").count == 1, "the older device gets the record, without the field it does not know")
            _ = await o.stop()

            o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", v2], dataDirectory: old)
            try await o.fetch()
            #expect(try await o.objects("Trip").first?["values"]?["title"] == "Untitled",
                    "the upgrade migrates the row (the default), and nothing refetches what the older version skipped")
            try await b.set(trip, ["title": "Kyoto in autumn"])
            try await b.send()
            try await o.fetch()
            #expect(try await o.objects("Trip").first?["values"]?["title"] == "Kyoto in autumn", "the record's next change carries the field")
            await ConflictTests.stop(cloud, o, b)
        }

        @Test("A changed attribute type or a new mandatory attribute without a default is refused at start, and the stores are left as they were")
        func changesCoreDataCannotInferAreRefused() async throws {
            let cloud = try await Cloud.start()
            let data = cloud.directory.file("o-data")
            let path = cloud.directory.file("v1.json")
            try JSONWriter.text(GraphShareTests.model).write(toFile: path, atomically: true, encoding: .utf8)
            let o = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", path], dataDirectory: data)
            _ = try await GraphShareTests.trip(on: o)
            _ = await o.stop()

            let retyped = try Self.version("retyped", in: cloud) { entities in
                Self.edit(&entities, "Photo") { $0["attributes"] = [["name": "id", "type": "integer"]] }
            }
            let refused = try await MeowProcess.run("store-service", Self.arguments(cloud, directory: data, model: retyped))
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("migrationMissingMappingModel"))
            #expect(refused.stderr.contains("Photo.id changed type from string to integer"))
            #expect(refused.stderr.contains("134140"))

            let mandatory = try Self.version("mandatory", in: cloud) { entities in
                Self.edit(&entities, "Trip") { $0["attributes"] = [["name": "id", "type": "string"], ["name": "country", "type": "string", "optional": false]] }
            }
            // Without a mirror: CloudKit's model rules refuse a mandatory attribute without a default before any migration.
            let missing = try await MeowProcess.run("store-service", Self.arguments(cloud, directory: data, model: mandatory, mirrored: false))
            #expect(missing.status != 0)
            #expect(missing.stderr.contains("Trip.country is mandatory and has no default value, and 1 existing object(s) have no value for it"))

            // The refused starts changed nothing: the first version still opens, every photo a string.
            let again = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", path], dataDirectory: data)
            #expect(try await again.objects("Photo").compactMap { $0["values"]?["id"]?.stringValue } == ["p1", "p2", "p3"])
            await ConflictTests.stop(cloud, again)
        }
    }
}
