import Foundation
import MeowWire
import SQLiteKit
import ServiceRuntime
import StoreWire
import Synchronization
@testable import StoreServiceKit
import Testing

@Suite("Routing, merge and predicate rules (in-process)")
struct RuleTests {
    let stores = [StoreRouter.StoreInfo(name: "Private", scope: .private, entities: ["CareEvent", "CareSession"]),
                  StoreRouter.StoreInfo(name: "Shared", scope: .shared, entities: ["CareEvent", "CareSession"])]
    // Load order shared first, as when the shared store happens to finish loading first.
    var sharedFirst: [StoreRouter.StoreInfo] { stores.reversed() }

    @Test func deterministicRoutingPrefersAssignThenRelatedThenPrivate() throws {
        let router = StoreRouter(mode: .deterministic, stores: stores)
        let decisions = try router.route([
            .init(entity: "CareEvent", assigned: 1, links: []),
            .init(entity: "CareEvent", assigned: nil, links: [("session", .store(1))]),
            .init(entity: "CareEvent", assigned: nil, links: []),
            .init(entity: "CareEvent", assigned: nil, links: [("session", .newObject(0))]),
        ])
        #expect(decisions.map(\.store) == [1, 1, 0, 1])
        #expect(decisions.map(\.reason) == [.assigned, .relatedObject, .privateStoreDefault, .relatedObject])
        // Load order does not matter to the deterministic rule.
        let reordered = StoreRouter(mode: .deterministic, stores: sharedFirst)
        #expect(try reordered.route([.init(entity: "CareEvent", assigned: nil, links: [])])[0].store == 1)
    }

    @Test func strictRoutingRefusesAnAmbiguousInsert() throws {
        let router = StoreRouter(mode: .strict, stores: stores)
        #expect(try router.route([.init(entity: "CareEvent", assigned: nil, links: [("session", .store(1))])])[0].store == 1)
        let error = #expect(throws: ServiceError.self) { try router.route([.init(entity: "CareEvent", assigned: nil, links: [])]) }
        #expect(error?.wire.code == .ambiguousStoreAssignment)
    }

    @Test func legacyRoutingTakesTheFirstLoadedStoreLikeCoreData() throws {
        let router = StoreRouter(mode: .legacy, stores: sharedFirst)
        let decision = try router.route([.init(entity: "CareEvent", assigned: nil, links: [])])[0]
        #expect(router.stores[decision.store].name == "Shared")
        #expect(decision.reason == .loadOrder)
    }

    @Test func routingWithOneCandidateStoreNeedsNoChoice() throws {
        let onlyPrivate = [StoreRouter.StoreInfo(name: "Private", scope: .private, entities: ["Cat"]),
                           StoreRouter.StoreInfo(name: "Shared", scope: .shared, entities: ["CareEvent"])]
        let decision = try StoreRouter(mode: .strict, stores: onlyPrivate).route([.init(entity: "CareEvent", assigned: nil, links: [])])[0]
        #expect(decision.store == 1)
        #expect(decision.reason == .onlyStoreWithEntity)
    }

    // snapshot: what the context read; the store then changed `note`; the context changed `note` and `value`.
    let snapshot: [String: SQLValue] = ["note": .text("a"), "value": .real(1), "id": .text("e1")]
    let stored: [String: SQLValue] = ["note": .text("store"), "value": .real(1), "id": .text("e1-renamed")]
    let changes: [String: SQLValue] = ["note": .text("mine"), "value": .real(2)]

    @Test func mergePoliciesDecideConflictingPropertiesAsCoreDataDoes() {
        #expect(MergePolicy.error.resolve(snapshot: snapshot, changes: changes, stored: stored) == .conflict)
        #expect(MergePolicy.rollback.resolve(snapshot: snapshot, changes: changes, stored: stored) == .write([:]))
        // Store trump: the store's note wins; value only the context changed, so it stays.
        #expect(MergePolicy.mergeByPropertyStoreTrump.resolve(snapshot: snapshot, changes: changes, stored: stored) == .write(["value": .real(2)]))
        // Object trump: both of the context's edits win; id (only the store changed it) is not written.
        #expect(MergePolicy.mergeByPropertyObjectTrump.resolve(snapshot: snapshot, changes: changes, stored: stored) == .write(changes))
        // Overwrite: the whole in-memory object, including the id as the context read it.
        #expect(MergePolicy.overwrite.resolve(snapshot: snapshot, changes: changes, stored: stored)
                == .write(["note": .text("mine"), "value": .real(2), "id": .text("e1")]))
    }

    @Test func predicatesParseTheNSPredicateSubset() throws {
        let parsed = try Predicate.parse("session.id == %@ AND (value > 10 OR note == nil) AND NOT eventTypeRaw IN {'note', \"play\"}",
                                         arguments: ["default-session"])
        #expect(parsed == .and([
            .compare(keyPath: ["session", "id"], op: .equal, value: "default-session", options: []),
            .or([.compare(keyPath: ["value"], op: .greater, value: 10, options: []),
                 .compare(keyPath: ["note"], op: .equal, value: .null, options: [])]),
            .not(.within(keyPath: ["eventTypeRaw"], values: ["note", "play"])),
        ]))
        #expect(try Predicate.parse("note BEGINSWITH[c] 'ab' || value <= -1.5") == .or([
            .compare(keyPath: ["note"], op: .beginsWith, value: "ab", options: .caseInsensitive),
            .compare(keyPath: ["value"], op: .lessOrEqual, value: -1.5, options: []),
        ]))
    }

    @Test(arguments: ["value >", "value == 'a", "(value == 1", "value ~ 3", "value == 1 extra", "value == %@"])
    func malformedPredicatesAreRefusedWithAReason(_ text: String) {
        let error = #expect(throws: ServiceError.self) { try Predicate.parse(text) }
        #expect(error?.wire.code == .invalidPredicate)
        #expect(error?.wire.message.hasPrefix("Invalid predicate: ") == true)
    }

    @Test func addingTheSameStoreTwiceFailsWith134081() throws {
        let coordinator = PersistentStoreCoordinator(model: .meowCare())
        try coordinator.addStore(configuration: "Private", url: "memory:///a/MeowCare-Private.sqlite", filePath: nil)
        let error = #expect(throws: ServiceError.self) {
            try coordinator.addStore(configuration: "Shared", url: "memory:///a/MeowCare-Private.sqlite", filePath: nil)
        }
        #expect(error?.wire.code == .storeAlreadyAdded)
        #expect(error?.wire.message == "Can't add the same store twice")
        #expect(error?.wire.details["coreDataCode"] == 134081)
        // Two in-memory stores with distinct URLs load side by side, with distinct identities.
        try coordinator.addStore(configuration: "Shared", url: "memory:///a/MeowCare-Shared.sqlite", filePath: nil)
        let identities = Set(coordinator.storeDescriptions.map(\.storeUUID))
        #expect(identities.count == 2)
    }
}

@Suite("Packed history (in-process)")
struct PackedHistoryTests {
    @Test("The packed reader reads what append writes, escapes, tombstones and other spacing included")
    func packedReaderReadsWhatAppendWrites() {
        var changes = HistoryChanges()
        let list = JSONWriter.text(strings: ["note", "value"])
        for index in 0..<50 {
            changes.append(kind: index % 3 == 0 ? .update : .insert, entity: "CareEvent", primaryKey: Int64(index + 1),
                           uuid: "U-\(index)", changedJSON: index % 5 == 0 ? nil : (index % 7 == 0 ? "[]" : list))
        }
        changes.append(kind: .insert, entity: "CareSession", primaryKey: -7, uuid: "odd ] name", changedJSON: JSONWriter.text(strings: ["a]b", "c"]))
        let plain = changes.packed
        #expect(HistoryChanges.entries(plain).count == 51)
        #expect(HistoryChanges.entries(plain)[3] == HistoryChanges.Entry(kind: .update, entity: "CareEvent", primaryKey: 4, uuid: "U-3", changed: ["note", "value"]))
        #expect(HistoryChanges.entries(plain).last?.uuid == "odd ] name")
        #expect(HistoryChanges.entries(plain).last?.primaryKey == -7)
        #expect(HistoryChanges.entries(plain).last?.changed == ["a]b", "c"])
        #expect(HistoryChanges.entries(plain)[1].changed == ["note", "value"])
        #expect(HistoryChanges.entries(plain)[0].changed == nil && HistoryChanges.entries(plain)[7].changed == [])
        // An escaped string, a tombstone (a delete), other spacing, and an empty column.
        var escaped = HistoryChanges()
        escaped.append(kind: .insert, entity: "CareEvent", primaryKey: 1, uuid: "q\"uote", changedJSON: nil)
        #expect(HistoryChanges.entries(escaped.packed).first?.uuid == "q\"uote")
        changes.append(kind: .delete, entity: "CareEvent", primaryKey: 3, uuid: "U-3", changedJSON: nil, tombstone: ["id": "e3"])
        #expect(HistoryChanges.entries(changes.packed).count == 52)
        #expect(HistoryChanges.entries(changes.packed).last?.tombstone == ["id": "e3"])
        #expect(HistoryChanges.entries(#"[ ["insert","CareEvent",1,"U",null,null] ]"#).map(\.uuid) == ["U"])
        // A row it cannot read is skipped; a column that is not an array reads as none.
        #expect(HistoryChanges.entries(#"[["insert","CareEvent",1,"U",null,null],["bogus","E",1,"V",null,null],[1],["insert","E",2,"W",null,null]]"#).map(\.uuid) == ["U", "W"])
        #expect(HistoryChanges.entries("[]").isEmpty && HistoryChanges.entries("not json").isEmpty)
    }

    @Test("A run of updates is packed byte for byte as the same updates appended one by one, after other entries too")
    func runOfUpdatesMatchesSingleAppends() {
        let list = JSONWriter.text(strings: ["session"])
        let rows: [(key: Int64, uuid: String)] = [(3, "U-3"), (9, "q\"uote"), (12, "0190ABCD-7000-8000-9000-0123456789AB"), (14, "caf\u{E9}/x")]
        for leading in [false, true] {
            var single = HistoryChanges(), run = HistoryChanges()
            if leading {
                single.append(kind: .insert, entity: "CareSession", primaryKey: 1, uuid: "S", changedJSON: nil)
                run.append(kind: .insert, entity: "CareSession", primaryKey: 1, uuid: "S", changedJSON: nil)
            }
            for row in rows { single.append(kind: .update, entity: "CareEvent", primaryKey: row.key, uuid: row.uuid, changedJSON: list) }
            // Handed over out of key order, as an UPDATE's scan returns them: written in key order.
            var updated = UpdatedRows()
            for row in [rows[2], rows[0], rows[3], rows[1]] { updated.append(key: row.key, uuid: row.uuid) }
            updated.sortByKey()
            run.append(HistoryChanges.UpdateRun(entity: "CareEvent", changedJSON: list, rows: updated))
            #expect(run.packed == single.packed)
            #expect(run.count == single.count)
            // What is appended after a run follows it in the same array.
            single.append(kind: .delete, entity: "CareEvent", primaryKey: 20, uuid: "D", changedJSON: nil, tombstone: ["id": "d"])
            run.append(kind: .delete, entity: "CareEvent", primaryKey: 20, uuid: "D", changedJSON: nil, tombstone: ["id": "d"])
            #expect(run.packed == single.packed)
            #expect(run.withPackedBytes { String(decoding: $0, as: UTF8.self) } == single.packed)
            #expect(HistoryChanges.entries(run.packed).last?.uuid == "D")
            #expect(HistoryChanges.entries(run.packed).dropLast().suffix(4).map(\.uuid) == rows.map(\.uuid))
            #expect(updated.keys == [3, 9, 12, 14])
        }
    }

    @Test("Object uuids are version 7: strictly increasing from one source, even when the clock stands still or steps back")
    func objectUUIDsAreTimeOrdered() {
        let stepsBack = Mutex<[UInt64]>([1_000, 1_000, 999, 500, 1_001])
        var source = RandomUUIDSource(clock: { stepsBack.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] } })
        var uuids = (0..<5).map { _ in source.next() }
        // A millisecond that never ends: the 12-bit counter runs out and the time carries on.
        uuids += (0..<5_000).map { _ in source.next() }
        #expect(zip(uuids, uuids.dropFirst()).allSatisfy { $0 < $1 }, "each uuid sorts after the one before")
        #expect(Set(uuids).count == uuids.count)
        for uuid in uuids {
            let text = Array(uuid.utf8)
            #expect(text.count == 36 && text[14] == UInt8(ascii: "7") && "89AB".utf8.contains(text[19]), "\(uuid) is not a version 7 UUID")
        }
        #expect(uuids[0].hasPrefix("00000000-03E8-7"), "the first 48 bits are the millisecond (1,000 = 0x3E8)")
        #expect(uuids.last!.hasPrefix("00000000-03E"), "the time carried forward by a millisecond or two, not more")
        var real = RandomUUIDSource()
        let now = RandomUUIDSource.systemMillis()
        let millis = UInt64(real.next().prefix(13).replacingOccurrences(of: "-", with: ""), radix: 16) ?? 0
        // (Within a minute either way: the wall clock may be stepped between the two reads.)
        #expect(millis + 60_000 > now && millis < now + 60_000, "a real source stamps the current time")
    }
}

@Suite("The remoteChange event's text (in-process)")
struct RemoteChangeNoticeTextTests {
    /// The event hub sends the hand-written text in place of `JSONEncoder`'s: both must decode to
    /// the same value, with and without a context name, and with strings that need escapes.
    @Test(arguments: [nil, "edit \"sheet\"\n✏️"] as [String?])
    func handWrittenTextDecodesAsTheEncodersDoes(contextName: String?) throws {
        let notice = RemoteChangeNotice(store: "Private", storeUUID: "E0FE3FEC-0AB8", token: 42, author: "sync\\app", contextName: contextName,
                                        changedObjectIDs: ["x-coredata://E0FE3FEC/CareEvent/p1", "x-coredata://E0FE3FEC/CareEvent/p2 \u{1}"])
        var text = ""
        #expect(notice.writeJSON(to: &text))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(try JSONParser.parse(text) == JSONParser.parse(Array(encoder.encode(notice))))
        #expect(try JSONDecoder().decode(RemoteChangeNotice.self, from: Data(text.utf8)).changedObjectIDs == notice.changedObjectIDs)
    }

    @Test func noObjectsIsAnEmptyList() throws {
        var text = ""
        #expect(RemoteChangeNotice(store: "S", storeUUID: "U", token: 0, author: "a", contextName: nil, changedObjectIDs: []).writeJSON(to: &text))
        #expect(try JSONParser.parse(text)["changedObjectIDs"] == .array([]))
    }
}
