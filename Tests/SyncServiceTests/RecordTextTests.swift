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
        var share = CloudRecord(recordName: CloudRecord.zoneShareName, zoneID: ZoneID(zoneName: "Zone"), recordType: CloudRecord.shareRecordType)
        share.shareInfo = ShareInfo(owner: "owner", publicPermission: "none", rootRecordName: nil, participants: [])
        var text = "prefix"
        #expect(FetchZoneChangesResult(changed: Self.records(2, seed: 1) + [share], deleted: [], token: "t", moreComing: false).writeJSON(to: &text) == false)
        #expect(text == "prefix")
    }
}
