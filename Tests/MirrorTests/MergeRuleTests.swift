import CloudWire
import Foundation
import MeowWire
import SQLiteKit
import StoreWire
import Testing
import TestSupport
@testable import CloudMirrorKit
@testable import StoreServiceKit

extension Mirroring {
    /// The per-field merge rule (docs/RULES.md, mirroring) on its own, apart from the processes that use it.
    @Suite("Mirroring: the per-field merge rule")
    struct MergeRuleTests {
        static func field(_ text: String) -> JSONValue { ["type": "string", "value": .string(text)] }

        /// A MeowCare private store: in memory, or on a file at `filePath`.
        static func privateStore(_ url: String, filePath: String? = nil) throws -> PersistentStore {
            let model = ManagedObjectModel.meowCare()
            let configuration = try #require(model.configurations.first { $0.scope == .private })
            return try PersistentStore(url: url, filePath: filePath, configuration: configuration, model: model)
        }
        let early = FieldStamp(time: 100, device: "A")
        let late = FieldStamp(time: 200, device: "A")

        @Test("A field only one side changed keeps that side's value; the other side's change survives too")
        func oneSideEach() {
            let ancestor = ["CD_note": Self.field("a"), "CD_title": Self.field("t")]
            let server = ["CD_note": Self.field("server"), "CD_title": Self.field("t")]
            let client = ["CD_note": Self.field("a"), "CD_title": Self.field("client")]
            let outcome = MirrorMerge(policy: .latestEdit).merge(server: server, serverTimes: [:], client: client, clientTimes: [:],
                                                                 ancestor: ancestor, localChanged: ["CD_title"])
            #expect(outcome.fields == ["CD_note": Self.field("server"), "CD_title": Self.field("client")])
            #expect(outcome.clientWon)
        }

        @Test("Both changed: latestEdit takes the later stamp, ties go to the greater device name; policies override")
        func bothChanged() {
            let ancestor = ["CD_note": Self.field("a")]
            let server = ["CD_note": Self.field("server")]
            let client = ["CD_note": Self.field("client")]
            func run(_ policy: MirrorConflictPolicy, server serverStamp: FieldStamp, client clientStamp: FieldStamp) -> JSONValue? {
                MirrorMerge(policy: policy).merge(server: server, serverTimes: ["CD_note": serverStamp], client: client,
                                                  clientTimes: ["CD_note": clientStamp], ancestor: ancestor, localChanged: ["CD_note"]).fields["CD_note"]
            }
            #expect(run(.latestEdit, server: early, client: late) == Self.field("client"))
            #expect(run(.latestEdit, server: late, client: early) == Self.field("server"))
            #expect(run(.latestEdit, server: FieldStamp(time: 100, device: "B"), client: FieldStamp(time: 100, device: "A")) == Self.field("server"))
            #expect(run(.latestEdit, server: FieldStamp(time: 100, device: "A"), client: FieldStamp(time: 100, device: "B")) == Self.field("client"))
            #expect(run(.serverWins, server: early, client: late) == Self.field("server"))
            #expect(run(.clientWins, server: late, client: early) == Self.field("client"))
        }

        @Test("Setting nil is an edit: a later nil removes the field")
        func nilIsAnEdit() {
            let outcome = MirrorMerge(policy: .latestEdit).merge(
                server: ["CD_note": Self.field("server")], serverTimes: ["CD_note": early],
                client: [:], clientTimes: ["CD_note": late], ancestor: ["CD_note": Self.field("a")], localChanged: ["CD_note"])
            #expect(outcome.fields["CD_note"] == nil)
            #expect(outcome.clientWon)
        }

        @Test("A field the client did not edit never overrides the server, even when it differs")
        func untouchedFieldsFollowTheServer() {
            let outcome = MirrorMerge(policy: .clientWins).merge(
                server: ["CD_note": Self.field("server")], serverTimes: [:], client: ["CD_note": Self.field("stale")], clientTimes: [:],
                ancestor: ["CD_note": Self.field("stale")], localChanged: [])
            #expect(outcome.fields["CD_note"] == Self.field("server"))
            #expect(!outcome.clientWon)
        }

        @Test("An edit back to the ancestor's value is still an edit: its later stamp wins over the server's earlier one")
        func editBackToTheAncestorsValue() {
            // B's insert said "re-measured" (stamp 50); B cleared it (150); A set it back (200).
            let inserted = FieldStamp(time: 50, device: "B"), cleared = FieldStamp(time: 150, device: "B")
            let outcome = MirrorMerge(policy: .latestEdit).merge(
                server: [:], serverTimes: ["CD_note": cleared], client: ["CD_note": Self.field("re-measured")], clientTimes: ["CD_note": late],
                ancestor: ["CD_note": Self.field("re-measured")], ancestorTimes: ["CD_note": inserted], localChanged: ["CD_note"])
            #expect(outcome.fields["CD_note"] == Self.field("re-measured"))
            #expect(outcome.times["CD_note"] == late)
            #expect(outcome.clientWon)
            // Without stamps to tell, the value decides: as the ancestor's, it is no edit.
            let unstamped = MirrorMerge(policy: .latestEdit).merge(
                server: [:], serverTimes: [:], client: ["CD_note": Self.field("re-measured")], clientTimes: [:],
                ancestor: ["CD_note": Self.field("re-measured")], localChanged: ["CD_note"])
            #expect(unstamped.fields["CD_note"] == nil)
            #expect(!unstamped.clientWon)
        }

        @Test("A field the queue still names, carrying the ancestor's own stamp, is no edit: even clientWins leaves the server's newer value")
        func fieldAlreadyTakenByTheServer() {
            // The server took the client's note (stamp `early`); another device changed it since.
            let outcome = MirrorMerge(policy: .clientWins).merge(
                server: ["CD_note": Self.field("theirs")], serverTimes: ["CD_note": late], client: ["CD_note": Self.field("mine")],
                clientTimes: ["CD_note": early], ancestor: ["CD_note": Self.field("mine")], ancestorTimes: ["CD_note": early],
                localChanged: ["CD_note"])
            #expect(outcome.fields["CD_note"] == Self.field("theirs"))
            #expect(!outcome.clientWon)
        }

        @Test("A server edit back to the ancestor's value is an edit too: serverWins and a later stamp keep it")
        func serverEditBackToTheAncestorsValue() {
            let ancestor = ["CD_note": Self.field("a")]
            func run(_ policy: MirrorConflictPolicy) -> MirrorMerge.Outcome {
                MirrorMerge(policy: policy).merge(
                    server: ["CD_note": Self.field("a")], serverTimes: ["CD_note": late], client: ["CD_note": Self.field("client")],
                    clientTimes: ["CD_note": FieldStamp(time: 150, device: "A")], ancestor: ancestor,
                    ancestorTimes: ["CD_note": early], localChanged: ["CD_note"])
            }
            #expect(run(.latestEdit).fields["CD_note"] == Self.field("a"))
            #expect(run(.serverWins).fields["CD_note"] == Self.field("a"))
            #expect(run(.clientWins).fields["CD_note"] == Self.field("client"))
        }

        @Test("Both sides set the same value: the later stamp is kept and sent; an earlier local one changes nothing")
        func sameValueKeepsTheLaterStamp() {
            let server = ["CD_title": Self.field("at the vet")]
            func run(client clientStamp: FieldStamp, server serverStamp: FieldStamp) -> MirrorMerge.Outcome {
                MirrorMerge(policy: .latestEdit).merge(server: server, serverTimes: ["CD_title": serverStamp], client: server,
                                                       clientTimes: ["CD_title": clientStamp], ancestor: ["CD_title": Self.field("Mochi")],
                                                       ancestorTimes: [:], localChanged: ["CD_title"])
            }
            let later = run(client: late, server: early)
            #expect(later.fields == server)
            #expect(later.times["CD_title"] == late)
            #expect(later.clientWon)
            let earlier = run(client: early, server: late)
            #expect(earlier.times["CD_title"] == late)
            #expect(!earlier.clientWon)
        }

        @Test("Numbers compare by value: 250.0 sent and 250 read back are one value")
        func numbersCompareByValue() {
            let sent: [String: JSONValue] = ["CD_value": ["type": "double", "value": .double(250)]]
            let read: [String: JSONValue] = ["CD_value": ["type": "double", "value": .int(250)]]
            #expect(MirrorRecordCoding.dataFields(sent) == MirrorRecordCoding.dataFields(read))
        }

        @Test("MC_fieldModified groups fields by stamp; the stamp-per-field form of older records still reads")
        func fieldStampText() throws {
            let a = FieldStamp(time: 100.5, device: "A"), b = FieldStamp(time: 100.5, device: "B")
            let times = ["CD_note": a, "CD_id": a, "CD_value": b]
            let text = FieldStamp.encode(times)
            #expect(text == #"[{"device":"A","fields":["CD_id","CD_note"],"time":100.5},{"device":"B","fields":["CD_value"],"time":100.5}]"#)
            #expect(FieldStamp.decode(text) == times)
            #expect(FieldStamp.encode(["CD_id", "CD_note"], a) == FieldStamp.encode(["CD_id": a, "CD_note": a]))
            #expect(FieldStamp.decode(#"{"CD_note":{"device":"A","time":100.5},"CD_value":{"device":"B","time":100.5}}"#)
                    == ["CD_note": a, "CD_value": b])
            #expect(FieldStamp.decode(#"[{"device":"A","time":1}]"#).isEmpty)
            #expect(FieldStamp.encode([:]) == "[]" && FieldStamp.isEmptyText("[]") && FieldStamp.isEmptyText("{}"))
        }

        @Test("A queue written before entries carried a new object's stamps and its row's key gains both when the mirror opens it; old entries are kept")
        func pendingColumnsAreAdded() throws {
            let store = try Self.privateStore("memory://migrate")
            try store.database.execute("""
                CREATE TABLE mirror_pending(seq INTEGER PRIMARY KEY AUTOINCREMENT, uuid TEXT NOT NULL UNIQUE,
                    entity TEXT NOT NULL, kind TEXT NOT NULL, zone_name TEXT, owner_name TEXT, changed TEXT NOT NULL,
                    not_before REAL NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0);
                INSERT INTO mirror_pending(uuid, entity, kind, changed) VALUES ('old', 'CareEvent', 'update', '["CD_note"]');
                """)
            let state = StoreBookkeeping(store)
            try state.createTables()
            let old = try #require(try state.pending(uuid: "old"))
            #expect(old.kind == .update && old.changed == ["CD_note"] && old.primaryKey == nil)
            let stamps = FieldStamp.encode(["CD_id"], FieldStamp(time: 2.5, device: "A"))
            try store.database.transaction {
                try state.enqueue(uuid: "new", entity: "CareEvent", kind: .insert, zone: nil, changed: ["CD_id"], new: true, timesText: stamps, primaryKey: 7)
            }
            #expect(try state.pending(uuid: "new")?.primaryKey == 7)
            #expect(try state.fieldTimesText("new") == stamps, "a new object's stamps are read from its entry")
            // An update queued on top keeps the entry's stamps and key; a stamps row, once written, wins.
            try store.database.transaction { try state.setFieldTimes("new", ["CD_note": FieldStamp(time: 3, device: "A")]) }
            try store.database.transaction { try state.enqueue(uuid: "new", entity: "CareEvent", kind: .update, zone: nil, changed: ["CD_note"]) }
            #expect(try state.pending(uuid: "new")?.primaryKey == 7 && state.pending(uuid: "new")?.kind == .insert)
            #expect(try state.fieldTimes("new").keys.sorted() == ["CD_id", "CD_note"])
            try state.createTables()  // opening again changes nothing
            #expect(try state.pending(uuid: "new")?.primaryKey == 7)
            // A uuid inserted again (a client's own uuid) takes the new insert's stamps, even none.
            try store.database.transaction { try state.dropFieldTimes(["new"]) }
            try store.database.transaction { try state.enqueue(uuid: "new", entity: "CareEvent", kind: .insert, zone: nil, changed: [], new: true, timesText: nil, primaryKey: 8) }
            #expect(try state.fieldTimesText("new") == nil, "not the earlier life's stamps")
        }

        @Test("Record metadata has no index on its zone (a store written with one loses it when the mirror opens it); the zone's records are still found")
        func metadataZoneIndexIsDropped() throws {
            let store = try Self.privateStore("memory://meta-index")
            let state = StoreBookkeeping(store)
            try state.createTables()
            try store.database.execute("CREATE INDEX mirror_meta_zone ON mirror_meta(zone_name, owner_name)")
            try state.createTables()
            #expect(try store.database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'mirror_meta' AND sql IS NOT NULL")?.int == 0)
            let zone = ZoneID(zoneName: "share-1", ownerName: "owner")
            try store.database.transaction { try state.setMeta(.init(uuid: "a", entity: "CareEvent", zone: zone, changeTag: "t1", serverFields: nil)) }
            try store.database.transaction { try state.setMeta(.init(uuid: "b", entity: "CareEvent", zone: .coreData, changeTag: "t2", serverFields: nil)) }
            #expect(try state.recordNames(inZone: zone).map(\.uuid) == ["a"])
            #expect(try state.knowsRecords(inZone: zone) && !state.knowsRecords(inZone: ZoneID(zoneName: "other", ownerName: "owner")))
            #expect(try state.knownZones() == [zone, .coreData])
        }

        @Test("A file store's reading companion reads what the store committed, in snapshots, and cannot write; an in-memory store has none")
        func readingCompanion() throws {
            let memory = try Self.privateStore("memory://companion")
            #expect(try memory.readingCompanion() == nil)
            let dir = TemporaryDirectory(prefix: "companion")
            defer { withExtendedLifetime(dir) {} }  // removed only once the store is done with its files
            let store = try Self.privateStore("file://\(dir.file("p.sqlite"))", filePath: dir.file("p.sqlite"))
            let state = StoreBookkeeping(store)
            try state.createTables()
            let reader = try #require(try store.readingCompanion())
            #expect(try store.readingCompanion() === reader, "made once")
            #expect(reader.name == store.name && reader.uuid == store.uuid)
            try store.database.transaction { try state.enqueue(uuid: "n1", entity: "CareEvent", kind: .insert, zone: nil, changed: ["CD_id"], new: true, primaryKey: 1) }
            let seen = try reader.database.readTransaction { () throws -> [String] in
                let first = try StoreBookkeeping(reader).dueEntries(now: 0, limit: 10, after: 0).map(\.pending.uuid)
                // A commit made meanwhile is not in this snapshot.
                try store.database.transaction { try state.enqueue(uuid: "n2", entity: "CareEvent", kind: .insert, zone: nil, changed: ["CD_id"], new: true, primaryKey: 2) }
                return try first + StoreBookkeeping(reader).dueEntries(now: 0, limit: 10, after: 0).map(\.pending.uuid)
            }
            #expect(seen == ["n1", "n1"])
            #expect(try reader.database.readTransaction { try StoreBookkeeping(reader).dueEntries(now: 0, limit: 10, after: 0).map(\.pending.uuid) } == ["n1", "n2"])
            #expect(throws: SQLiteError.self) { try reader.database.transaction { try StoreBookkeeping(reader).dropPending("n1") } }
        }

        @Test("A record the server lost but a local edit re-creates (resurrect) keeps its stamps, wherever they lived")
        func forgettingTheServerCopyKeepsStamps() throws {
            let store = try Self.privateStore("memory://resurrect")
            let state = StoreBookkeeping(store)
            try state.createTables()
            let sent = FieldStamp.encode(["CD_id", "CD_value"], FieldStamp(time: 1, device: "A"))
            let record: [String: JSONValue] = ["CD_id": ["type": "string", "value": "x"], MirrorBookkeeping.fieldTimesField: ["type": "string", "value": .string(sent)]]
            // Stamps only in the kept server copy (a record sent or imported and not edited since).
            try store.database.transaction { try state.setMeta(.init(uuid: "kept", entity: "CareEvent", zone: ZoneID.coreData, changeTag: "t1", serverFields: record)) }
            try store.database.transaction { try state.enqueue(uuid: "kept", entity: "CareEvent", kind: .update, zone: nil, changed: ["CD_note"]) }
            try store.database.transaction { try state.forgetServerCopy("kept") }
            #expect(try state.meta("kept") == nil)
            #expect(try state.fieldTimesText("kept") == sent)
            // A new object's stamps in its entry, then an edit's stamps row on top: the row's win.
            let inserted = FieldStamp.encode(["CD_id"], FieldStamp(time: 1, device: "A"))
            try store.database.transaction { try state.enqueue(uuid: "edited", entity: "CareEvent", kind: .insert, zone: nil, changed: ["CD_id"], new: true, timesText: inserted) }
            try store.database.transaction { try state.setFieldTimes("edited", ["CD_note": FieldStamp(time: 2, device: "A")]) }
            try store.database.transaction { try state.setMeta(.init(uuid: "edited", entity: "CareEvent", zone: ZoneID.coreData, changeTag: "t1", serverFields: record)) }
            try store.database.transaction { try state.forgetServerCopy("edited") }
            #expect(try state.fieldTimes("edited").keys.sorted() == ["CD_id", "CD_note"])
        }

        @Test("An imported field's stored value: the same as converting it to a wire value and storing that, for every type and odd value")
        func importedValuesStoreAsContextSetWould() throws {
            var allowed = AttributeDescription(name: "kind", type: .string)
            allowed.allowedValues = ["a", "b"]
            let attributes = AttributeType.allCases.map { AttributeDescription(name: "x", type: $0) } + [allowed]
            let values: [JSONValue?] = [nil, .null, "a", "z", "", "2026-11-30T08:00:00Z", 0, 1, -7, 42, 2.5, -0.25, 1e12, -1e12, 1796025600,
                                        1796025600.1235, .double(.greatestFiniteMagnitude), true, false, ["nested": 1], [1, 2]]
            for attribute in attributes {
                for value in values {
                    let wire = MirrorRecordCoding.attributeValue(value, type: attribute.type)
                    let expected = try? AttributeCoding.storageValue(wire, for: attribute, entity: "E")
                    #expect(MirrorImport.storageValue(value, attribute: attribute) == expected, "\(attribute.type) \(String(describing: value))")
                }
            }
        }

        @Test("A record's values by stored property: the same from its fields' text as from their tree, unknown fields skipped, missing ones nil")
        func fieldLayoutReadsTextAsTree() throws {
            let model = ManagedObjectModel.meowCare()
            for entity in model.entities {
                let layout = MirrorImport.FieldLayout(entity)
                // Every other field present, plus fields this model does not know sorted among them.
                var fields: [String: JSONValue] = ["AAA_first": ["type": "string", "value": "?"], "CD_zzz": ["type": "int64", "value": 9],
                                                   "CD_entityName": ["type": "string", "value": .string(entity.name)]]
                for (index, name) in layout.names.enumerated() where index % 2 == 0 {
                    fields[name] = ["type": "string", "value": .string("\(name)-\(index)")]
                    fields[name + "_"] = ["type": "string", "value": "unknown"]
                }
                let text = JSONWriter.text(.object(fields))
                let stored = try #require(StoredFields.fields(text), "\(text)")
                let fromText = layout.values(stored)
                #expect(fromText == layout.values(fields))
                #expect(fromText.count == layout.names.count)
                for (index, name) in layout.names.enumerated() {
                    let expected: JSONValue? = index % 2 == 0 ? .some(.string("\(name)-\(index)")) : .none
                    #expect(fromText[index] == expected, "\(entity.name).\(name)")
                }
            }
        }

        @Test("A row's fields as text: each attribute as its typed field in name order, the stamps as a string field")
        func fieldsTextOfARow() throws {
            let store = try Self.privateStore("memory://rules")
            let entity = try #require(store.model.entity(named: "CareEvent"))
            var values = [SQLValue](repeating: .null, count: entity.attributes.count + entity.toOneRelationships.count)
            for (index, attribute) in entity.attributes.enumerated() where attribute.name != "note" {
                switch attribute.type {
                case .string: values[index] = .text("say \"hi\"\n")
                case .integer, .boolean: values[index] = .integer(7)
                case .double: values[index] = .real(250.5)
                case .date: values[index] = .text("2026-11-30T08:00:00.250Z")
                default: Issue.record("MeowCare's model has only the five basic types")
                }
            }
            let row = PersistentStore.StoredRow(primaryKey: 1, version: 1, uuid: "E1", zone: nil, values: values)
            let state = StoreBookkeeping(store)
            let times = FieldStamp.encode(["CD_id": FieldStamp(time: 1.5, device: "A")])
            var cache = MirrorRecordCoding.TextCache()
            let text = try MirrorRecordCoding.fieldsText(entity: entity, row: row, state: state, timesText: times, cache: &cache)
            // The second record with the same stamps takes them from the cache: the same text.
            #expect(try MirrorRecordCoding.fieldsText(entity: entity, row: row, state: state, timesText: times, cache: &cache) == text)
            let record = try #require(try JSONParser.parse(text).objectValue)
            #expect(record["CD_id"] == ["type": "string", "value": "say \"hi\"\n"])
            #expect(record["CD_value"] == ["type": "double", "value": 250.5])
            #expect(record["CD_occurredAt"]?["type"] == "date")
            #expect(record["CD_occurredAt"]?["value"]?.doubleValue == ISOTime.seconds("2026-11-30T08:00:00.250Z"))
            #expect(record["CD_note"] == nil, "a nil attribute is an absent field")
            #expect(record["CD_session"] == nil, "no related row, no field")
            #expect(record[CloudKitNames.entityNameField] == ["type": "string", "value": "CareEvent"])
            #expect(record[MirrorBookkeeping.fieldTimesField] == ["type": "string", "value": .string(times)])
            #expect(try MirrorRecordCoding.fields(entity: entity, row: row, state: state, timesText: times) == record)
            // The entity name first, then the data fields in name order, then the stamps.
            let order = ["CD_entityName", "CD_eventTypeRaw", "CD_id", "CD_occurredAt", "CD_updatedAt", "CD_value", "MC_fieldModified"]
            let positions = order.compactMap { text.range(of: "\"\($0)\":")?.lowerBound }
            #expect(positions.count == order.count && positions == positions.sorted(), "\(text)")
        }

        @Test("A moved record names the zone and tag it left in Core Data's move receipt field, in its place among the fields; only a copy of that zone with another tag was left out")
        func movedFromRules() throws {
            let from = MovedFrom(zoneName: ZoneID.coreDataZoneName, changeTag: "t7")
            let text = from.adding(to: #"{"CD_note":{"type":"string","value":"n"},"MC_fieldModified":{"type":"string","value":"{}"}}"#)
            let fields = try #require(try JSONParser.parse(text).objectValue)
            #expect(MovedFrom(fields: fields) == from)
            let receipt = Data(#"{"recordChangeTag":"t7","zoneName":"com.apple.coredata.cloudkit.zone"}"#.utf8).base64EncodedString()
            #expect(text == #"{"CD_moveReceipt":{"type":"bytes","value":"\#(receipt)"},"CD_note":{"type":"string","value":"n"},"MC_fieldModified":{"type":"string","value":"{}"}}"#, "\(text)")
            #expect(MovedFrom(fields: ["CD_moveReceipt": ["type": "bytes", "value": "bm90IGpzb24="]]) == nil)
            #expect(MirrorRecordCoding.dataFields(fields).keys.sorted() == ["CD_note"], "bookkeeping is no data field")
            // A record moved under the receipt's former name is no data field either.
            #expect(MirrorRecordCoding.dataFields(["CD_note": Self.field("n"), "MC_movedFrom": Self.field("{}")]).keys.sorted() == ["CD_note"])

            let share = ZoneID(zoneName: CloudKitNames.coreDataShareZonePrefix + "Z")
            let moved = CloudRecord(recordName: "e1", zoneID: share, recordType: "CD_CareEvent", fields: fields)
            func meta(_ zone: ZoneID, _ tag: String?) -> MirrorBookkeeping.Meta {
                MirrorBookkeeping.Meta(uuid: "e1", entity: "CareEvent", zone: zone, changeTag: tag, serverFields: nil)
            }
            #expect(CoreDataMapping.movedWithout(meta(.coreData, "t8"), record: moved, fields: fields), "another version was deleted by the move")
            #expect(!CoreDataMapping.movedWithout(meta(.coreData, "t7"), record: moved, fields: fields), "the version the mover had")
            #expect(!CoreDataMapping.movedWithout(meta(share, "x"), record: moved, fields: fields), "already known in the new zone")
            #expect(!CoreDataMapping.movedWithout(meta(ZoneID(zoneName: "elsewhere"), "t8"), record: moved, fields: fields), "moved from another zone")
            #expect(!CoreDataMapping.movedWithout(meta(.coreData, "t8"), record: moved, fields: MirrorRecordCoding.dataFields(fields)), "not a moved record")
        }
    }
}
