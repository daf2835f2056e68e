import CloudWire
import Foundation
import MeowWire
@testable import SyncServiceKit
import Testing

/// Replies written as text must decode to exactly what their Encodable form decodes to.
@Suite("Replies written as text")
struct RecordTextTests {
    static func viaEncoder<T: Encodable>(_ value: T) throws -> JSONValue {
        try JSONParser.parse(Array(JSONEncoder().encode(value)))
    }

    static func viaText(_ value: some JSONTextWritable) throws -> JSONValue? {
        var text = ""
        guard value.writeJSON(to: &text) else { return nil }
        return try JSONParser.parse(text)
    }

    static func records(_ count: Int, seed: UInt64) -> [CloudRecord] {
        var random = SplitMix64(state: seed)
        let strings = ["plain", "quote \" and \\ backslash", "line\nbreak\ttab", "é猫🐈", "", "\u{1}control"]
        return (0..<count).map { index in
            var fields: [String: JSONValue] = [
                "CD_note": ["type": "string", "value": .string(strings[Int(random.next() % UInt64(strings.count))])],
                "CD_value": ["type": "double", "value": .double([120, 120.5, 1e20, -0.25, 1780000000.123][Int(random.next() % 5)])],
                "CD_count": ["type": "int64", "value": .int(Int(truncatingIfNeeded: random.next() % 1_000_000) - 500_000)],
                "CD_list": ["type": "stringList", "value": ["a", "b\"c"]],
            ]
            if index % 3 == 0 { fields["CD_gone"] = ["type": "string", "value": nil] }
            var record = CloudRecord(recordName: "r\(index) \"q\"", zoneID: ZoneID(zoneName: "Zone \(index % 2)"), recordType: "CD_CareEvent", fields: fields)
            record.recordChangeTag = index % 4 == 0 ? nil : "\(index)"
            record.creationDate = 1_780_000_000 + Double(index)
            record.modificationDate = index % 2 == 0 ? 1_780_000_000.5 : nil
            record.creatorUserRecordName = "owner"
            record.lastModifiedUserRecordName = index % 2 == 0 ? "alice" : nil
            if index % 5 == 0 { record.parent = RecordReference(recordName: "session", action: index % 10 == 0 ? "deleteSelf" : nil) }
            if index % 7 == 0 { record.share = RecordReference(recordName: "cloudkit.share") }
            record.omitsFields = index % 6 == 5
            return record
        }
    }

    @Test("a page of changes: the same JSON as JSONEncoder's", arguments: [1, 2, 3] as [UInt64])
    func pages(seed: UInt64) throws {
        let page = FetchZoneChangesResult(changed: Self.records(40, seed: seed), deleted: [DeletedRecord(recordName: "x\"y", recordType: "CD_CareEvent")],
                                          token: "z4.5.0", moreComing: seed == 2)
        #expect(try Self.viaText(page) == Self.viaEncoder(page))
    }

    @Test("a modify reply: the same JSON as JSONEncoder's")
    func modifyReply() throws {
        let reply = ModifyResult(saved: Self.records(25, seed: 9), deleted: [RecordID(recordName: "gone", zoneID: ZoneID(zoneName: "Zone"))])
        #expect(try Self.viaText(reply) == Self.viaEncoder(reply))
    }

    @Test("a modify reply written ahead: the same text, and written again once its records change")
    func modifyReplyWrittenAhead() throws {
        var reply = ModifyResult(saved: Self.records(25, seed: 5), deleted: [RecordID(recordName: "gone", zoneID: ZoneID(zoneName: "Zone"))])
        let ahead = reply.written()
        #expect(try Self.viaText(ahead) == Self.viaText(reply))
        reply = ahead
        reply.saved.removeLast()
        let shorter = try #require(try Self.viaText(reply)?["saved"]?.arrayValue)
        #expect(shorter.count == 24, "a changed result is written from its records, not from the text written before")
    }

    @Test("a change page that sends the stored fields text reads the same as one written from the parsed fields")
    func pageWithStoredFieldsText() throws {
        let cloud = try CloudFixture()
        try cloud.makeZone()
        var saves = Self.records(30, seed: 4).enumerated().map { index, record -> CloudRecord in
            var record = record
            record.recordName = "r\(index)"
            record.omitsFields = false
            record.fields["CD_gone"] = nil
            record.zoneID = ZoneID(zoneName: "Zone")
            record.recordChangeTag = nil
            record.parent = nil
            record.share = nil
            return record
        }
        saves[0].fields["CD_whole"] = ["type": "double", "value": .double(1_796_025_600)]
        try cloud.save(saves)
        let params = FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: "Zone"))
        let asText = try cloud.engine.fetchZoneChanges(caller: "owner", params, fieldsAsText: true)
        let parsed = try cloud.engine.fetchZoneChanges(caller: "owner", params)
        #expect(asText.changed.count == 30 && asText.changed.allSatisfy { $0.fieldsText != nil })
        let text = try #require(try Self.viaText(asText))
        #expect(text == (try Self.viaText(parsed)))
        #expect(text == (try Self.viaEncoder(asText)))
    }

    @Test("a share record's reply falls back to JSONEncoder")
    func shareFallsBack() throws {
        var share = CloudRecord(recordName: CloudKitNames.zoneShareName, zoneID: ZoneID(zoneName: "Zone"), recordType: CloudKitNames.shareRecordType)
        share.shareInfo = ShareInfo(owner: "owner", publicPermission: .none, rootRecordName: nil, participants: [])
        var text = "prefix"
        #expect(FetchZoneChangesResult(changed: Self.records(2, seed: 1) + [share], deleted: [], token: "t", moreComing: false).writeJSON(to: &text) == false)
        #expect(text == "prefix")
    }
}

/// Saves store a request's fields text as it came when it is already in stored form; the check
/// must never accept a text that writing the parsed fields would change.
@Suite("Fields text stored as sent")
struct StoredFormTests {
    static func stored(_ text: String) throws -> String? {
        guard let fields = FieldCoding.normalized(try JSONParser.parse(text)) else { return nil }
        return RecordFields(fields).text
    }

    static func fields(seed: UInt64) -> [String: JSONValue] {
        var random = SplitMix64(state: seed)
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        let strings = ["plain", "quote \" and \\ backslash", "line\nbreak\r\ttab", "é猫🐈", "", "\u{1}\u{1f}\u{7f}", "a/b"]
        let doubles: [Double] = [120, 120.5, 1e20, -0.25, 1780000000.123, 0.1, 1e-7, -3, 999_999_999_999_999, 1e15]
        // Dates lie in years 0001–9999 (FieldValueRules); others are refused, not stored.
        let dates: [Double] = [120, 120.5, -0.25, 1780000000.123, 0.1, 1e-7, -3, 253_402_300_799.5, -62_135_596_800]
        var fields: [String: JSONValue] = [:]
        for index in 0..<Int(random.next() % 8) {
            let name = pick(["CD_a", "CD_note", "CD_Z", "MC_fieldModified", "CD_value\(index)", "x y", "CD_date"])
            fields[name] = pick([
                ["type": "string", "value": .string(pick(strings))],
                ["type": "bytes", "value": "AAEC"],
                ["type": "int64", "value": .int(pick([0, -1, 42, Int(Int32.max) * 1000, -987_654_321_012_345_678]))],
                ["type": "double", "value": .double(pick(doubles))],
                ["type": "date", "value": .double(pick(dates))],
            ] as [JSONValue])
        }
        return fields
    }

    @Test("what a save writes is in stored form, and reads back to the same text", arguments: Array(0..<40) as [UInt64])
    func writtenTextsAreStoredForm(seed: UInt64) throws {
        let text = RecordFields(Self.fields(seed: seed)).text
        #expect(StoredFields.isStoredForm(text), "\(text)")
        #expect(try Self.stored(text) == text)
    }

    @Test("texts a save would write differently are not in stored form")
    func otherFormsAreRefused() {
        let refused = [
            #"{ "CD_a":{"type":"string","value":"x"}}"#,                                  // whitespace
            #"{"CD_b":{"type":"string","value":"x"},"CD_a":{"type":"string","value":"y"}}"#, // key order
            #"{"CD_a":{"type":"string","value":"x"},"CD_a":{"type":"string","value":"y"}}"#, // duplicate key
            #"{"CD_a":{"value":"x","type":"string"}}"#,                                    // member order
            #"{"CD_a":{"type":"string","value":"a\/b"}}"#,                                 // escaped slash
            #"{"CD_a":{"type":"string","value":"\u0041"}}"#,                               // needless \u
            #"{"CD_a":{"type":"string","value":"\u001F"}}"#,                               // uppercase hex
            #"{"CD_a":{"type":"string","value":"\u000a"}}"#,                               // \n written as \u
            #"{"CD_a":{"type":"double","value":5.0}}"#,                                    // whole double
            #"{"CD_a":{"type":"double","value":1E-7}}"#,                                   // exponent form
            #"{"CD_a":{"type":"double","value":1e15}}"#,                                   // written as 1e+15
            #"{"CD_a":{"type":"double","value":-0}}"#,
            #"{"CD_a":{"type":"date","value":1e+20}}"#,                                    // outside years 0001–9999
            #"{"CD_a":{"type":"bytes","value":"AAE"}}"#,                                   // not base64
            #"{"CD_a":{"type":"int64","value":5.0}}"#,
            #"{"CD_a":{"type":"int64","value":007}}"#,
            #"{"CD_a":null}"#,                                                             // nulls are left out
            #"{"CD_a":{"type":"string","value":"x","extra":1}}"#,
            #"{"CD_a":{"type":"reference","value":{"recordName":"r"}}}"#,
            #"{"CD_a":{"type":"string","value":null}}"#,
            #"{"CD_a":{"type":"string","value":"x"}} "#,
            #"{"CD_\u0061":{"type":"string","value":"x"}}"#,
        ]
        for text in refused { #expect(!StoredFields.isStoredForm(text), "\(text)") }
        // Bytes that are not UTF-8 (the parser refuses them) are never taken as stored form.
        for bad: [UInt8] in [[0xC3, 0x28], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80], [0xC3]] {
            let bytes = Array(#"{"CD_a":{"type":"string","value":""#.utf8) + bad + Array(#""}}"#.utf8)
            #expect(bytes.withUnsafeBufferPointer { StoredFields.end($0, from: 0) } == nil, "\(bad)")
            #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(bytes) }
        }
        let good = Array(#"{"CD_a":{"type":"string","value":"é猫🐈"}}"#.utf8)
        #expect(good.withUnsafeBufferPointer { StoredFields.end($0, from: 0) } == good.count)
        #expect(StoredFields.isStoredForm("{}"))
        #expect(StoredFields.isStoredForm(#"{"CD_a":{"type":"double","value":1e-07}}"#), "Swift's own exponent form")
    }

    @Test("members in stored form sent in any order are sorted into the text a save writes", arguments: Array(0..<40) as [UInt64])
    func membersInAnyOrderAreSorted(seed: UInt64) throws {
        var random = SplitMix64(state: seed &+ 2000)
        let canonical = RecordFields(Self.fields(seed: seed)).text
        var members = try JSONParser.parse(canonical).objectValue!.keys.sorted().map { name -> String in
            var member = ""
            JSONWriter.append(.string(name), to: &member)
            return member + ":" + RecordFields(["x": try JSONParser.parse(canonical)[name]!]).text.dropFirst(5).dropLast()
        }
        for index in members.indices.reversed() { members.swapAt(index, Int(random.next() % UInt64(index + 1))) }
        let sent = "{" + members.joined(separator: ",") + "}"
        let scan = try #require(Array(sent.utf8).withUnsafeBufferPointer { StoredFields.sortedStoredForm($0, from: 0) }, "\(sent)")
        #expect(scan.end == sent.utf8.count)
        #expect((scan.sorted ?? sent) == canonical, "\(sent)")
        #expect(scan.sorted == nil || sent != canonical)
        #expect(scan.signature == StoredFields.typeSignature(canonical))
        #expect(try Self.stored(sent) == canonical)
    }

    @Test("members out of order are not sorted into stored form when one repeats or is not stored form itself")
    func unsortableMembersAreRefused() {
        let refused = [
            #"{"CD_b":{"type":"string","value":"x"},"CD_a":{"type":"string","value":"y"},"CD_b":{"type":"string","value":"z"}}"#,
            #"{"CD_b":{"type":"string","value":"x"},"CD_a":{"value":"y","type":"string"}}"#,
            #"{"CD_b":{"type":"double","value":5.0},"CD_a":{"type":"string","value":"y"}}"#,
            #"{"CD_b":{"type":"string","value":"x"}, "CD_a":{"type":"string","value":"y"}}"#,
        ]
        for text in refused {
            #expect(Array(text.utf8).withUnsafeBufferPointer { StoredFields.sortedStoredForm($0, from: 0) } == nil, "\(text)")
        }
    }

    @Test("no text is accepted that writing its parsed fields would change (mutated texts)", arguments: Array(0..<40) as [UInt64])
    func acceptedTextsAreExactlyWhatASaveWrites(seed: UInt64) throws {
        var random = SplitMix64(state: seed &+ 1000)
        let base = Array(RecordFields(Self.fields(seed: seed)).text.utf8)
        let alphabet = Array(#"{}[]":,\ ue0-9.Ea"#.utf8)
        var accepted = 0
        for _ in 0..<200 {
            var bytes = base
            for _ in 0...Int(random.next() % 3) where !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[at] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: at)
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            guard StoredFields.isStoredForm(text) else { continue }
            accepted += 1
            #expect(try Self.stored(text) == text, "accepted \(text)")
        }
        // Some mutations keep the stored form (a digit or a letter changed), so the check ran.
        #expect(accepted > 0 || base.count < 40)
    }
}
