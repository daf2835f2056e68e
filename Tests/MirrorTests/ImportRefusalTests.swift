import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Records another client wrote into the cloud that this device's store cannot hold.
    @Suite("Mirroring: cloud records the store refuses", .timeLimit(.minutes(5)))
    struct ImportRefusalTests {
        static let zone: JSONValue = ["zoneName": "com.apple.coredata.cloudkit.zone"]

        /// A CareEvent record as another client might write it: valid, with `changes` applied
        /// (a nil removes the field).
        static func event(_ name: String, _ changes: [String: JSONValue?] = [:], tag: String? = nil) -> JSONValue {
            var fields: [String: JSONValue] = [
                "CD_entityName": ["type": "string", "value": "CareEvent"], "CD_id": ["type": "string", "value": .string(name)],
                "CD_eventTypeRaw": ["type": "string", "value": "note"], "CD_occurredAt": ["type": "date", "value": 1_780_000_000],
                "CD_updatedAt": ["type": "date", "value": 1_780_000_000]]
            for (field, value) in changes { fields[field] = value }
            var record: [String: JSONValue] = ["recordName": .string(name), "recordType": "CD_CareEvent", "zoneID": zone, "fields": .object(fields)]
            if let tag { record["recordChangeTag"] = .string(tag) }
            return .object(record)
        }

        /// One record the store refuses used to fail every fetch of its zone (and every send,
        /// which fetches the zone first): the device stopped syncing. Now the page is applied
        /// without it; it is listed in `sync.status` (`unimportable`), logged, and told to the
        /// device's clients (`importRefused`); the device keeps syncing; a later, valid version
        /// of the record is imported and the listing goes.
        @Test("A record the store refuses is left out of its page, listed and announced; the rest syncs; a valid version later imports")
        func refusedRecordsAreLeftOutAndTheDeviceKeepsSyncing() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let watcher = try await a.remoteChangeWatcher()
            defer { watcher.close() }
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            // A date outside years 0001–9999 no longer gets this far: the cloud refuses it.
            do {
                _ = try await writer.call("records.modify", ["database": "private", "saves": [
                    Self.event("bad-date", ["CD_occurredAt": ["type": "date", "value": 1e300]])]])
                Issue.record("the cloud stored a date of 1e300 seconds")
            } catch {
                #expect(error.details["partialErrors"]?["bad-date"]?["code"] == "invalidArguments")
            }
            _ = try await writer.call("records.modify", ["database": "private", "atomic": false, "saves": [
                Self.event("ok-1"),
                Self.event("bad-type", ["CD_eventTypeRaw": ["type": "string", "value": "nap"]]),
                // A session without its required flag (an attribute with a default, sent without it).
                ["recordName": "no-flag", "recordType": "CD_CareSession", "zoneID": Self.zone, "fields": [
                    "CD_entityName": ["type": "string", "value": "CareSession"], "CD_id": ["type": "string", "value": "no-flag"],
                    "CD_title": ["type": "string", "value": "Flagless"]]],
                Self.event("bad-value", ["CD_note": ["type": "int64", "value": 7]]),
                Self.event("ok-2")]])
            let fetched = try await a.fetch()
            #expect(fetched["changedRecords"] == 5)
            #expect(try await a.ids() == ["ok-1", "ok-2"])
            let listed = try await a.status()["stores"]?.arrayValue?.first { $0["store"] == "Private" }?["unimportable"]?.arrayValue ?? []
            #expect(listed.compactMap { $0["recordName"]?.stringValue } == ["bad-type", "bad-value", "no-flag"])
            #expect(listed.compactMap { $0["code"]?.stringValue } == ["validationStringPatternMatching",
                                                                    "validationInvalidValue", "validationMissingMandatoryProperty"])
            var events = watcher.events.makeAsyncIterator()
            var announced: [String] = []
            while announced.count < 3, let event = await events.next() {
                if event.name == "importRefused", let name = event.data["recordName"]?.stringValue { announced.append(name) }
            }
            #expect(announced.sorted() == ["bad-type", "bad-value", "no-flag"])

            // The device still syncs both ways.
            try await a.insertEvents(["mine"])
            #expect(try await a.send()["saved"] == 1)
            #expect(try await a.fetch()["changedRecords"] == 0)
            // Fetching the zone again from scratch meets the same versions of the refused
            // records: they are refused again, and not announced again (checked below).
            _ = try await cloud.admin("admin.expireChangeTokens", [:])
            try await a.fetch()

            // The other client fixes one record: its new version is imported, its listing goes.
            let current = try await writer.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "bad-type", "zoneID": Self.zone]]])
            let tag = try #require(current["records"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
            _ = try await writer.call("records.modify", ["database": "private", "saves": [Self.event("bad-type", tag: tag)]])
            try await a.fetch()
            #expect(try await a.ids() == ["bad-type", "mine", "ok-1", "ok-2"])
            let still = try await a.status()["stores"]?.arrayValue?.first { $0["store"] == "Private" }?["unimportable"]?.arrayValue ?? []
            #expect(still.compactMap { $0["recordName"]?.stringValue } == ["bad-value", "no-flag"])
            // Between the refusals and the fixed record's import (the refetch included), nothing
            // was announced again.
            var between: [String] = []
            while let event = await events.next() {
                if event.name == "remoteChange", event.data["author"] == "sync" { break }
                between.append(event.name)
            }
            #expect(!between.contains("importRefused"), "\(between)")
            // A zone that leaves the device takes its refusals with it.
            _ = try await cloud.admin("admin.reset", ["scope": "zone", "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone", "ownerName": "owner"]])
            try await a.fetch()
            let gone = try await a.status()["stores"]?.arrayValue?.first { $0["store"] == "Private" }?["unimportable"]?.arrayValue
            #expect(gone?.isEmpty == true, "\(String(describing: gone))")
            await ConflictTests.stop(cloud, a)
        }

        /// An event imported while its session was refused gets no session (the relationship's
        /// target is not here); once a valid version of the session arrives, the event is linked
        /// to it as its server copy says.
        @Test("An event imported while its session was refused is linked to the session once a valid version of it arrives")
        func childrenOfARefusedRecordAreLinkedWhenItArrives() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            func session(_ fields: [String: JSONValue], tag: String? = nil) -> JSONValue {
                var record: [String: JSONValue] = ["recordName": "S-1", "recordType": "CD_CareSession", "zoneID": Self.zone, "fields": .object(
                    ["CD_entityName": ["type": "string", "value": "CareSession"], "CD_id": ["type": "string", "value": "vet"],
                     "CD_title": ["type": "string", "value": "Vet"]].merging(fields) { $1 })]
                if let tag { record["recordChangeTag"] = .string(tag) }
                return .object(record)
            }
            // No isDefault: the store refuses the session (a required value).
            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                session([:]), Self.event("visit", ["CD_session": ["type": "string", "value": "S-1"]])]])
            try await a.fetch()
            #expect(try await a.ids() == ["visit"])
            #expect(try await a.object(id: "visit")?["values"]?["session"] == .null)
            let tag = try #require(try await writer.call("records.fetch", ["database": "private", "recordIDs": [["recordName": "S-1", "zoneID": Self.zone]]])[
                "records"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
            _ = try await writer.call("records.modify", ["database": "private", "saves": [session(["CD_isDefault": ["type": "int64", "value": 0]], tag: tag)]])
            try await a.fetch()
            let vet = try await a.objectID(id: "vet", entity: "CareSession")
            #expect(try await a.object(id: "visit")?["values"]?["session"]?.stringValue == vet)
            #expect(try await a.pending() == 0, "the link is the server's already: nothing to send")
            await ConflictTests.stop(cloud, a)
        }

        /// The other way round: the cloud's schema (CloudKit's, learned from the first save of
        /// each field) refuses a device's record whose field has another type, as CloudKit refuses
        /// records of an app version that changed an attribute's type. The device keeps the change
        /// queued and reports the server's message; the fields the device defined are in the schema.
        @Test("A device's record whose field type differs from the cloud's schema is refused with CloudKit's message and stays queued")
        func aFieldTypeTheSchemaDoesNotHaveIsRefused() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            try await a.insertEvents(["first"])
            try await a.send()
            let schema = try await cloud.admin("admin.schema", [:])["recordTypes"]?["CD_CareEvent"]
            #expect(schema?["CD_occurredAt"] == "TIMESTAMP")
            #expect(schema?["CD_value"] == "DOUBLE")
            #expect(schema?["CD_note"] == nil, "no event had a note: the field is not defined")
            // An older app version wrote notes as numbers.
            let writer = try await cloud.connect("owner-secret")
            defer { writer.close() }
            do {
                _ = try await writer.call("admin.schema", [:])
                Issue.record("a user read the schema through an admin operation")
            } catch {
                #expect(error.code == "permissionFailure")
            }
            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                Self.event("older", ["CD_note": ["type": "int64", "value": 7]])]])
            // Three noted events in one request: the records share their fields' types, so the
            // server decides the first and gives the others its verdict.
            let context = try await a.context()
            _ = try await a.call("object.insert", ["context": .string(context), "objects": .array(["n1", "n2", "n3"].map { id in
                ["entity": "CareEvent", "values": Device.eventValues(id, note: "after breakfast")]
            })])
            _ = try await a.call("context.save", ["context": .string(context)])
            let sent = try await a.send()
            #expect(sent["saved"] == 0)
            #expect(try await a.pending() == 3)
            let error = try await a.status()["lastError"]
            #expect(error?["code"] == "invalidArguments")
            #expect(error?["message"] == "invalid attempt to set value type STRING for field 'CD_note' for type 'CD_CareEvent', defined to be: INT64")
            #expect(try await cloud.eventIDs(zoneName: "com.apple.coredata.cloudkit.zone") == ["first", "older"])
            await ConflictTests.stop(cloud, a)
        }
    }
}
