import CloudWire
import Foundation
import MeowWire
import Synchronization
@testable import CloudMirrorKit
@testable import StoreServiceKit
import Testing
import TestSupport

extension Mirroring {
    /// The pages a zone fetch asks for ahead of the one it applies (`PagesAhead`).
    @Suite("Mirroring: pages fetched ahead (in-process)")
    struct PagesAheadTests {
        @Test("A page that arrives after the fetch stopped is not decoded; one before is")
        func pagesAfterStopAreNotDecoded() throws {
            let ahead = PagesAhead(depth: 2)
            let decodes = Mutex(0)
            let sent = Mutex<[ReplyWaiter]>([])
            ahead.setUp(decode: { json in decodes.withLock { $0 += 1 }; return json["token"]?.stringValue ?? "" },
                        send: { _, waiter in sent.withLock { $0.append(waiter) } })
            ahead.ask(after: "t1")
            ahead.ask(after: "t2")
            let waiters = sent.withLock { $0 }
            #expect(waiters.count == 2)
            waiters[0].resolve(.success(["token": "t2"]))
            #expect(waiters[0].decoded(as: String.self) == "t2")
            ahead.stop()
            waiters[1].resolve(.success(["token": "t3"]))
            #expect(waiters[1].decoded(as: String.self) == nil, "decoded after the fetch ended")
            #expect(decodes.withLock { $0 } == 1)
            if case .failure = waiters[1].wait() { Issue.record("the reply itself must still reach whoever waits") }
        }

        typealias Page = MirrorEngine.ZoneChanges

        /// A page read from its bytes, and the same page read from the tree the client parses
        /// replies into (nil for either that does not read).
        static func bothReads(_ text: String) throws -> (direct: Page?, tree: Page) {
            let model = ManagedObjectModel.meowCare()
            let holding = Set(model.entities.map(\.name))
            let bytes = Array(text.utf8)
            let direct = bytes.withUnsafeBufferPointer { Page(bytes: $0, preparer: PagePreparer(model: model, holding: holding)) }
            let tree = try Page(json: try JSONParser.parse(bytes), preparer: PagePreparer(model: model, holding: holding))
            return (direct, tree)
        }

        static func summary(_ page: Page) -> String {
            let records = page.changed.map { record in
                [record.recordName, record.zoneID.key, record.recordType, record.fieldsText ?? RecordFields(record.fields).text, record.recordChangeTag ?? "-",
                 record.share?.recordName ?? "-", "\(record.fields.count) fields"].joined(separator: "|")
            }
            let prepared = page.prepared.map { $0.map { "\($0.values) \($0.targets)" } ?? "nil" }
            return "\(records) \(page.deleted.map { "\($0.recordName)/\($0.recordType)" }) \(page.token) \(page.moreComing) \(prepared)"
        }

        static let fields = #"{"CD_eventTypeRaw":{"type":"string","value":"bloodGlucose"},"CD_id":{"type":"string","value":"e1"},"CD_note":{"type":"string","value":"before \"breakfast\""},"CD_occurredAt":{"type":"date","value":1780000000.5},"CD_session":{"type":"string","value":"S1"},"CD_value":{"type":"double","value":120}}"#

        @Test("A fetched page read from its bytes is the page read from its tree: records, kept fields text, tags, shares, deletions, token")
        func pageFromBytesMatchesTree() throws {
            let record = #"{"recordName":"E1","zoneID":{"zoneName":"com.apple.coredata.cloudkit.zone","ownerName":"__defaultOwner__"},"recordType":"CD_CareEvent","fields":\#(Self.fields),"recordChangeTag":"t7","creationDate":1780000000.25,"modificationDate":1780000001,"creatorUserRecordName":"alice","lastModifiedUserRecordName":"bob","parent":{"recordName":"S1","action":"none"}}"#
            let variants = [
                #"{"changed":[\#(record)],"deleted":[{"recordName":"E9","recordType":"CD_CareEvent"}],"token":"42","moreComing":true}"#,
                // No owner (the default), a null tag, a share reference, unknown members, an entity this store does not hold.
                #" { "changed" : [ {"recordName":"E2","zoneID":{"zoneName":"share-1"},"recordType":"CD_CareEvent","fields":\#(Self.fields),"recordChangeTag":null,"share":{"recordName":"cloudkit.zoneshare","x":[1,{}]},"later":{"a":[true,null]}} , {"recordName":"X","zoneID":{"zoneName":"z","ownerName":"o"},"recordType":"CD_Unknown","fields":{}} ] , "deleted" : [ ] , "token" : "t\u00e9" , "moreComing" : false , "extra" : 1 } "#,
                #"{"changed":[],"deleted":[{"recordName":"E3","other":1},{"recordType":"CD_CareSession","recordName":"S3"}],"token":"1","moreComing":false}"#,
                #"{"token":"5","changed":[\#(record)],"changed":[],"moreComing":false}"#,
            ]
            for text in variants {
                let (direct, tree) = try Self.bothReads(text)
                let read = try #require(direct, "not read from its bytes: \(text)")
                #expect(Self.summary(read) == Self.summary(tree), "\(text)")
            }
            let first = try #require(try Self.bothReads(variants[0]).direct)
            #expect(first.changed.first?.fieldsText == Self.fields)
            #expect(first.prepared.first??.targets == ["S1"])
        }

        @Test("A page the device cannot read is the fetch's error naming the field, never an empty page without a token")
        func unreadablePageIsAnError() throws {
            let model = ManagedObjectModel.meowCare()
            let tree = try JSONParser.parse(#"{"changed":[{"recordName":"E","zoneID":{"zoneName":"z"}}],"token":"z1.2.0","moreComing":true}"#)
            let error = #expect(throws: MessageReadError.self) { try Page(json: tree, preparer: PagePreparer(model: model, holding: ["CareEvent"])) }
            #expect(error?.description.hasPrefix("changed[0].recordType") == true, "\(String(describing: error))")
        }

        @Test("Random and damaged pages: what the scanner takes, the parser takes too and reads the same")
        func randomPages() throws {
            var random = SplitMix64(state: 2026_12_17)
            func pick<T>(_ options: [T]) -> T { options[Int(random.next() % UInt64(options.count))] }
            var taken = 0
            for round in 0..<500 {
                let records = (0..<Int(random.next() % 4)).map { index -> String in
                    var members = [#""recordName":"# + pick([#""E\#(index)""#, #""E\u00e9""#, "7"])]
                    members.append(#""zoneID":"# + pick([#"{"zoneName":"z"}"#, #"{"zoneName":"z","ownerName":null}"#, #"{"ownerName":"o","zoneName":"s"}"#, #"{"zoneName":1}"#]))
                    members.append(#""recordType":"# + pick([#""CD_CareEvent""#, #""CD_CareSession""#, #""cloudkit.share""#, "null"]))
                    members.append(#""fields":"# + pick([Self.fields, "{}", #"{"CD_id":{"value":"x","type":"string"}}"#, "null"]))
                    if random.next() % 2 == 0 { members.append(#""recordChangeTag":"# + pick([#""3""#, "null", "4"])) }
                    if random.next() % 3 == 0 {
                        members.append(pick([#""share":{"recordName":"cloudkit.zoneshare"}"#, #""share":null"#, #""creationDate":1.5"#,
                                             #""parent":{"recordName":"S1","action":"none"}"#, #""shareInfo":{"owner":"o","participants":[]}"#]))
                    }
                    return "{" + members.shuffled(using: &random).joined(separator: ",") + "}"
                }
                var members = [#""changed":[\#(records.joined(separator: ","))]"#, #""token":"# + pick([#""t1""#, "1"]),
                               #""moreComing":"# + pick(["true", "false", "null"])]
                if random.next() % 2 == 0 { members.append(#""deleted":[{"recordName":"D","recordType":"CD_CareEvent"}]"#) }
                var bytes = Array(("{" + members.shuffled(using: &random).joined(separator: ",") + "}").utf8)
                if round % 2 == 1 { damage(&bytes, random: &random) }
                let text = String(decoding: bytes, as: UTF8.self)
                let model = ManagedObjectModel.meowCare()
                let holding = Set(model.entities.map(\.name))
                guard let direct = bytes.withUnsafeBufferPointer({ Page(bytes: $0, preparer: PagePreparer(model: model, holding: holding)) }) else { continue }
                taken += 1
                let tree = try #require(try? JSONParser.parse(bytes), "the reader took what the parser refuses: \(text)")
                #expect(try Self.summary(direct) == Self.summary(Page(json: tree, preparer: PagePreparer(model: model, holding: holding))), "\(text)")
            }
            #expect(taken > 25, "the scanner should take the well-formed pages of the usual shape")
        }

        @Test("A page with fields not in stored form or a share's participants is read too; a malformed or mistyped one is refused")
        func otherPagesAreReadOrRefused() throws {
            let zone = #""zoneID":{"zoneName":"z"}"#
            let model = ManagedObjectModel.meowCare()
            for text in [
                #"{"changed":[{"recordName":"E",\#(zone),"recordType":"CD_CareEvent","fields":{"CD_id":{"value":"e","type":"string"}}}],"token":"1","moreComing":false}"#,
                #"{"changed":[{"recordName":"cloudkit.zoneshare",\#(zone),"recordType":"cloudkit.share","shareInfo":{"owner":"o","publicPermission":"none","participants":[]}}],"token":"1","moreComing":false}"#,
            ] {
                let read = Array(text.utf8).withUnsafeBufferPointer { Page(bytes: $0, preparer: PagePreparer(model: model, holding: ["CareEvent"])) }
                #expect(read?.changed.count == 1, "\(text)")
            }
            for text in [
                #"{"changed":[{"recordName":7,\#(zone),"recordType":"CD_CareEvent"}],"token":"1","moreComing":false}"#,
                #"{"changed":[],"token":"1","moreComing":"yes"}"#,
                #"{"changed":[],"token":"1","moreComing":false} x"#,
                #"{"changed":[],"token":"1",}"#,
            ] {
                let direct = Array(text.utf8).withUnsafeBufferPointer { Page(bytes: $0, preparer: PagePreparer(model: model, holding: ["CareEvent"])) }
                #expect(direct == nil, "\(text)")
            }
        }

        @Test("A records.modify reply read from its bytes gives the verdicts its tree gives; other shapes are left to the tree")
        func modifyVerdictsFromBytesMatchTree() throws {
            typealias Verdicts = ModifyVerdicts
            for text in [
                #"{"saved":[{"recordName":"A","recordChangeTag":"3"},{"recordName":"B","recordChangeTag":null},{"recordChangeTag":"9"}],"deleted":[{"recordName":"C","zoneID":{"zoneName":"z"}}]}"#,
                #" { "deleted" : [ ] , "saved" : [ { "zoneID" : {"zoneName":"z"} , "recordName" : "A\u00e9" , "recordChangeTag" : "4" , "x" : [1] } ] , "more" : {} } "#,
                #"{"saved":[{"recordName":"A","recordChangeTag":"1"}],"saved":[]}"#,
            ] {
                let bytes = Array(text.utf8)
                let direct = try #require(bytes.withUnsafeBufferPointer { try? Verdicts.read($0) }, "\(text)")
                let tree = try JSONParser.parse(bytes)
                let parsed = Verdicts(saved: tree["saved"], deleted: tree["deleted"])
                #expect(direct.saved == parsed.saved, "\(text)")
                #expect(direct.deleted == parsed.deleted, "\(text)")
            }
            let first = try #require(Array(#"{"saved":[{"recordName":"A","recordChangeTag":"3"},{"recordName":"B","recordChangeTag":null}],"deleted":[{"recordName":"C"}]}"#.utf8)
                .withUnsafeBufferPointer { try? Verdicts.read($0) })
            let expected: [String: String?] = ["A": "3", "B": nil]
            #expect(first.saved == expected)
            #expect(first.deleted == ["C"])
            for text in [#"{"saved":{}}"#, #"{"saved":[1]}"#, #"{"saved":[{"recordName":"A","recordChangeTag":3}]}"#, #"{"saved":[]} x"#] {
                #expect(Array(text.utf8).withUnsafeBufferPointer { try? Verdicts.read($0) } == nil, "\(text)")
            }
        }

        @Test("A reader that reads a page ahead asks for the next one first, and none after the fetch stopped")
        func readerAsksForTheNextPage() throws {
            let ahead = PagesAhead(depth: 2)
            let asked = Mutex<[String]>([])
            let sent = Mutex<[ReplyWaiter]>([])
            ahead.setUp(decode: { _ in "tree" }, read: { bytes in
                let token = String(decoding: bytes, as: UTF8.self)
                ahead.ask(after: token + "+")
                return token
            }, send: { token, waiter in
                asked.withLock { $0.append(token) }
                sent.withLock { $0.append(waiter) }
            })
            ahead.ask(after: "t1")
            let first = try #require(sent.withLock { $0.first })
            let reader = try #require(first.resultReader)
            #expect(Array("t2".utf8).withUnsafeBufferPointer { reader($0) })
            first.resolve(.success(.null))
            #expect(first.decoded(as: String.self) == "t2", "what the reader read is the decoded page, not a tree decode of null")
            #expect(asked.withLock { $0 } == ["t1", "t2+"])
            let second = try #require(sent.withLock { $0.last })
            ahead.stop()
            let late = try #require(second.resultReader)
            #expect(Array("t3".utf8).withUnsafeBufferPointer { late($0) }, "a late page is taken (and dropped), not parsed")
            second.resolve(.success(.null))
            #expect(second.decoded(as: String.self) == nil)
            #expect(asked.withLock { $0 } == ["t1", "t2+"], "nothing is asked for after the fetch stopped")
        }
    }
}
