import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// An older app version's model lacks a field a newer one writes (CareEvent.note here). The
    /// server writes only the keys a save carries, so the older device's edits, merges and
    /// conflicts never erase the newer one's field; a field a device clears is sent as null.
    @Suite("Mirroring: fields an older app version does not know", .timeLimit(.minutes(5)))
    struct UnknownFieldTests {
        /// MeowCare's model without CareEvent.note, written to `directory`.
        static func olderModel(in directory: TemporaryDirectory) async throws -> String {
            let printed = try await MeowProcess.run("store-service", ["--print-model"])
            var model = try JSONParser.parse(Array(printed.stdout.utf8))
            guard case var .object(root) = model, case var .array(entities) = root["entities"] else { throw WireError(.internalError, "no model") }
            for (index, entity) in entities.enumerated() where entity["name"] == "CareEvent" {
                guard case var .object(members) = entity, case let .array(attributes) = members["attributes"] else { continue }
                members["attributes"] = .array(attributes.filter { $0["name"] != "note" })
                entities[index] = .object(members)
            }
            root["entities"] = .array(entities)
            model = .object(root)
            let path = directory.file("older-model.json")
            try JSONWriter.text(model).write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        static func cloudEvent(_ cloud: Cloud, _ id: String) async throws -> [String: JSONValue] {
            try #require(try await cloud.records(user: "owner").first { $0["fields"]?["CD_id"]?["value"] == .string(id) }?["fields"]?.objectValue)
        }

        @Test("An older device's edit, and its merge of a conflicting edit, keep the field only the newer app version knows")
        func olderDeviceKeepsNewerFields() async throws {
            let cloud = try await Cloud.start()
            let newer = try await Device.start("N", user: "owner", cloud: cloud)
            let older = try await Device.start("O", user: "owner", cloud: cloud, extra: ["--model", try await Self.olderModel(in: cloud.directory)])
            try await newer.insertEvents(["e1"])
            let onNewer = try await newer.objectID(id: "e1")
            try await newer.set(onNewer, ["note": "from the newer app"])
            try await newer.send()
            try await older.fetch()
            #expect(try await older.object(id: "e1")?["values"]?["note"] == nil, "the older model has no note")

            // The older device edits the value: the note stays in the cloud.
            try await older.set(try await older.objectID(id: "e1"), ["value": 200])
            try await older.send()
            var fields = try await Self.cloudEvent(cloud, "e1")
            #expect(fields["CD_note"]?["value"] == "from the newer app")
            #expect(fields["CD_value"]?["value"]?.doubleValue == 200)

            // A conflict, either way round: the newer device edits the note, the older one (not
            // yet fetched) the value; the older one's merge keeps the note.
            try await newer.fetch()
            try await newer.set(onNewer, ["note": "edited by the newer app"])
            try await newer.send()
            try await older.set(try await older.objectID(id: "e1"), ["value": 210])
            try await older.send()
            fields = try await Self.cloudEvent(cloud, "e1")
            #expect(fields["CD_note"]?["value"] == "edited by the newer app")
            #expect(fields["CD_value"]?["value"]?.doubleValue == 210)
            try await newer.fetch()
            #expect(try await newer.object(id: "e1")?["values"]?["note"] == "edited by the newer app")
            #expect(try await newer.object(id: "e1")?["values"]?["value"]?.doubleValue == 210)

            // A field a device clears is cleared in the cloud too (sent as null).
            try await newer.set(onNewer, ["note": .null])
            try await newer.send()
            fields = try await Self.cloudEvent(cloud, "e1")
            #expect(fields["CD_note"] == nil)
            #expect(fields["CD_value"]?["value"]?.doubleValue == 210)
            await ConflictTests.stop(cloud, newer, older)
        }

        /// The fields of each `records.modify` save the device sent through the tap, in order.
        static func sentSaves(_ logFile: String) throws -> [[String: JSONValue]] {
            let lines = try String(contentsOfFile: logFile, encoding: .utf8).split(separator: "\n")
            let frames: [JSONValue] = lines.compactMap { line -> JSONValue? in
                guard let entry = try? JSONParser.parse(Array(line.utf8)), entry["event"] == "frame", entry["dir"] == "c2s" else { return nil }
                return entry["frame"]
            }
            let modifies = frames.filter { $0["op"] == "records.modify" }
            let saves: [JSONValue] = modifies.flatMap { $0["params"]?["saves"]?.arrayValue ?? [] }
            return saves.compactMap { $0["fields"]?.objectValue }
        }

        @Test("An update sends only the keys it changed (a cleared one as null) and the stamps; the cloud keeps the rest")
        func updatesCarryChangedKeysOnly() async throws {
            let cloud = try await Cloud.start()
            let tapSocket = cloud.directory.file("tap.sock")
            let logFile = cloud.directory.file("tap.log")
            let tap = try MeowProcess("meowctl", ["tap", "--listen", tapSocket, "--to", cloud.socket, "--log", logFile])
            #expect(await tap.waitForLine(containing: "tap ready") != nil)
            let device = try await Device.start("A", user: "owner", cloud: cloud, syncSocket: tapSocket)
            let other = try await Device.start("B", user: "owner", cloud: cloud)
            try await device.insertEvents(["e1"])
            let event = try await device.objectID(id: "e1")
            try await device.set(event, ["note": "first", "value": 5])
            try await device.send()
            let created = try #require(try Self.sentSaves(logFile).last)
            #expect(created["CD_entityName"] != nil && created["CD_eventTypeRaw"] != nil, "a new record carries every field")

            try await device.set(event, ["value": 7])
            try await device.send()
            let edited = try #require(try Self.sentSaves(logFile).last)
            #expect(Set(edited.keys) == ["CD_value", "MC_fieldModified"])

            try await device.set(event, ["note": .null])
            try await device.send()
            let cleared = try #require(try Self.sentSaves(logFile).last)
            #expect(Set(cleared.keys) == ["CD_note", "MC_fieldModified"])
            #expect(cleared["CD_note"] == .null)

            let fields = try await Self.cloudEvent(cloud, "e1")
            #expect(fields["CD_value"]?["value"]?.doubleValue == 7)
            #expect(fields["CD_note"] == nil)
            #expect(fields["CD_eventTypeRaw"] != nil && fields["CD_eventTypeRaw"] == created["CD_eventTypeRaw"],
                    "a key no save carried since the record was made is kept")
            try await other.fetch()
            #expect(try await other.object(id: "e1")?["values"]?["value"]?.doubleValue == 7)
            #expect((try await other.object(id: "e1")?["values"]?["note"] ?? .null) == .null)

            // The device's idea of the server's copy is the kept one with the sent keys applied:
            // a later conflict merges against it (another device's edit of another field wins
            // nothing it should not, and neither edit is lost).
            try await other.set(try await other.objectID(id: "e1"), ["note": "from B"])
            try await other.send()
            try await device.set(event, ["value": 9])
            try await device.send()
            try await other.fetch()
            try await device.fetch()
            for peer in [device, other] {
                #expect(try await peer.object(id: "e1")?["values"]?["note"] == "from B", "\(peer.name)")
                #expect(try await peer.object(id: "e1")?["values"]?["value"]?.doubleValue == 9, "\(peer.name)")
            }
            tap.kill()
            await ConflictTests.stop(cloud, device, other)
        }

        @Test("The server writes only the keys a save carries under every save policy; a null removes a key")
        func everyPolicyKeepsUnsentKeys() async throws {
            let cloud = try await Cloud.start()
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            var tag = try #require(try await writer.call("records.modify", ["database": "private", "saves": [
                ImportRefusalTests.event("k1", ["CD_note": ["type": "string", "value": "kept"], "CD_value": ["type": "double", "value": 1]])]])["saved"]?
                .arrayValue?.first?["recordChangeTag"]?.stringValue)
            for (policy, value) in [("ifServerRecordUnchanged", 2.0), ("changedKeys", 3.0), ("allKeys", 4.0)] {
                let record: JSONValue = ["recordName": "k1", "recordType": "CD_CareEvent", "zoneID": ImportRefusalTests.zone, "recordChangeTag": .string(tag),
                                         "fields": ["CD_value": ["type": "double", "value": .double(value)]]]
                let saved = try await writer.call("records.modify", ["database": "private", "savePolicy": .string(policy), "saves": [record]])
                tag = try #require(saved["saved"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
                let fields = try await Self.cloudEvent(cloud, "k1")
                #expect(fields["CD_note"]?["value"] == "kept", "\(policy) erased a key it was not sent")
                #expect(fields["CD_value"]?["value"]?.doubleValue == value)
                #expect(fields["CD_eventTypeRaw"]?["value"] == "note")
            }
            let cleared: JSONValue = ["recordName": "k1", "recordType": "CD_CareEvent", "zoneID": ImportRefusalTests.zone, "recordChangeTag": .string(tag),
                                      "fields": ["CD_note": .null]]
            _ = try await writer.call("records.modify", ["database": "private", "saves": [cleared]])
            let fields = try await Self.cloudEvent(cloud, "k1")
            #expect(fields["CD_note"] == nil)
            #expect(fields["CD_value"]?["value"]?.doubleValue == 4)
            await cloud.stop()
        }
    }
}
