import CloudWire
import FoundationEssentials
import MeowWire
import Testing
@testable import SyncServiceKit

/// Records on the wire: the record's one reader (values, and errors that name the field), the
/// nested-container encoding, the fields text's null skipping.
@Suite struct RecordCodingTests {
    static let fieldCases: [String] = [
        #"{"t":{"type":"string","value":"x"}}"#,
        #"{"n":{"type":"double","value":5},"d":{"type":"date","value":1780000000},"e":{"type":"double","value":2.5}}"#,
        #"{"i":{"type":"int64","value":5.0},"j":{"type":"int64","value":5.5},"k":{"type":"int64","value":1e300},"l":{"type":"int64","value":-7}}"#,
        #"{"s":{"type":"string","value":12},"b":{"type":"bytes","value":"AAE="},"x":{"type":"double","value":"no"}}"#,
        #"{"r":{"type":"reference","value":{"recordName":"p","action":"deleteSelf","extra":1}}}"#,
        #"{"r":{"type":"reference","value":{"recordName":"p","action":null}},"q":{"type":"reference","value":{"recordName":"p","action":3}}}"#,
        #"{"r":{"type":"reference","value":{"name":"p"}},"z":{"type":"reference","value":"p"}}"#,
        #"{"list":{"type":"list","value":[{"type":"int64","value":2.0},{"type":"double","value":1},null,{"type":"list","value":[{"type":"date","value":3}]}]}}"#,
        #"{"list":{"type":"list","value":[{"type":"string","value":"a"},5]},"other":{"type":"list","value":"not a list"}}"#,
        #"{"u":{"type":"location","value":{"lat":1,"lng":2.5}},"w":{"type":7,"value":1},"v":{"value":1},"y":{"type":"string"}}"#,
        #"{"extra":{"type":"double","value":1,"note":"kept"},"gone":null}"#,
        #"{}"#,
        // Decoding throws for these: a field that is neither null nor an object.
        #"{"bad":5}"#,
        #"{"ok":{"type":"string","value":"x"},"bad":"text"}"#,
        #"{"bad":[1]}"#,
    ]

    @Test func fieldsAreReadByTheirTypes() throws {
        let read = try CloudRecord.read(#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","fields":\#(Self.fieldCases[2])}"#)
        #expect(read.fields["i"]?["value"] == 5 && read.fields["j"]?["value"] == 5.5 && read.fields["l"]?["value"] == -7)
        let list = try CloudRecord.read(#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","fields":\#(Self.fieldCases[7])}"#)
        #expect(list.fields["list"]?["value"]?.arrayValue?[0]["value"] == 2 && list.fields["list"]?["value"]?.arrayValue?[1]["value"] == 1.0)
        for text in Self.fieldCases.dropLast(3) {
            #expect(FieldCoding.normalized(try JSONParser.parse(text)) != nil, "\(text)")
        }
        for text in Self.fieldCases.suffix(3) {
            #expect(FieldCoding.normalized(try JSONParser.parse(text)) == nil, "\(text)")
        }
        #expect(FieldCoding.normalized(.array([])) == nil)
        #expect(FieldCoding.normalized(.string("x")) == nil)
    }

    static let recordCases: [String] = [
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"CD_CareEvent"}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z","ownerName":"bob"},"recordType":"T","fields":{"n":{"type":"double","value":1}},"recordChangeTag":"1z","creationDate":5,"modificationDate":6.5,"creatorUserRecordName":"c","lastModifiedUserRecordName":"m","parent":{"recordName":"p"},"share":{"recordName":"s","action":"none"},"unknownKey":[1,2]}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z","ownerName":null},"recordType":"T","fields":null,"recordChangeTag":null,"parent":null,"share":null,"shareInfo":null}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"cloudkit.share","shareInfo":{"owner":"o","publicPermission":"none","participants":[]}}"#,
    ]

    /// Each refused record, and the error its reader gives (the field's path and what is wrong).
    static let refusedRecords: [(String, String)] = [
        (#"{"recordName":5,"zoneID":{"zoneName":"Z"},"recordType":"T"}"#, "recordName: expected a string"),
        (#"{"zoneID":{"zoneName":"Z"},"recordType":"T"}"#, "recordName: required"),
        (#"{"recordName":"a","zoneID":{"ownerName":"o"},"recordType":"T"}"#, "zoneID.zoneName: required"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z","ownerName":3},"recordType":"T"}"#, "zoneID.ownerName: expected a string"),
        (#"{"recordName":"a","zoneID":"Z","recordType":"T"}"#, "zoneID: expected an object"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","fields":{"bad":1}}"#, "fields.bad: expected an object"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","fields":[]}"#, "fields: expected an object"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","recordChangeTag":7}"#, "recordChangeTag: expected a string"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","creationDate":"now"}"#, "creationDate: expected a number"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","parent":{"recordName":"p","action":1}}"#, "parent.action: expected a string"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","share":"s"}"#, "share: expected an object"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":null}"#, "recordType: null; expected a string"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","shareInfo":{"owner":"o"}}"#, "shareInfo.publicPermission: required"),
        (#"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T",}"#, "the message: not valid JSON"),
        (#"[1]"#, "the message: expected an object"),
    ]

    @Test func recordsReadOrNameWhatIsWrong() throws {
        for text in Self.recordCases {
            let record = try CloudRecord.read(text)
            // Its Decodable conformance is the same reader, under either decoder.
            #expect(record == (try JSONValueDecoder().decode(CloudRecord.self, from: JSONParser.parse(text))), "\(text)")
            #expect(record == (try JSONDecoder().decode(CloudRecord.self, from: Data(text.utf8))), "\(text)")
        }
        let full = try CloudRecord.read(Self.recordCases[1])
        #expect(full.zoneID.ownerName == "bob" && full.creationDate == 5 && full.modificationDate == 6.5 && full.parent?.recordName == "p")
        #expect(full.share == RecordReference(recordName: "s", action: "none") && full.fields["n"]?["value"] == 1.0)
        #expect(try CloudRecord.read(Self.recordCases[2]).zoneID.ownerName == ZoneID.defaultOwner)
        #expect(try CloudRecord.read(Self.recordCases[3]).shareInfo?.owner == "o")
        for (text, message) in Self.refusedRecords {
            #expect(throws: MessageReadError.self, "\(text)") { try CloudRecord.read(text) }
            do { _ = try CloudRecord.read(text) } catch { #expect(error.description == message, "\(text)") }
        }
    }

    @Test func modifyParamsNameTheFieldOfABadRecord() throws {
        let good = #"{"database":"private","saves":[\#(Self.recordCases[0]),\#(Self.recordCases[1]),\#(Self.recordCases[3])],"returnFields":false}"#
        let params = try ModifyParams.read(good)
        #expect(params.saves?.count == 3 && params.returnFields == false && params.database == .private)
        #expect(try JSONValueDecoder().decode(ModifyParams.self, from: try JSONParser.parse(good)).saves == params.saves)
        // A bad record anywhere: its path in the message, and under a decoder the same path.
        let bad = #"{"database":"private","saves":[\#(Self.recordCases[0]),\#(Self.refusedRecords[7].0)]}"#
        do {
            _ = try ModifyParams.read(bad)
            Issue.record("a bad record was read")
        } catch {
            #expect(error.description == "saves[1].recordChangeTag: expected a string")
        }
        let error = #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(ModifyParams.self, from: try JSONParser.parse(bad)) }
        guard case let .typeMismatch(_, context)? = error else {
            Issue.record("expected typeMismatch, got \(String(describing: error))")
            return
        }
        #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["saves", "1", "recordChangeTag"])
        #expect(try ModifyParams.read(#"{"database":"shared","saves":null}"#).saves == nil)
    }

    @Test func encodedRecordsAreTheSameJSONAsTheirValues() throws {
        var record = CloudRecord(recordName: "a", zoneID: ZoneID(zoneName: "Z"), recordType: "T",
                                 fields: ["n": ["type": "double", "value": 2.5], "i": ["type": "int64", "value": -3],
                                          "l": ["type": "list", "value": [["type": "string", "value": "q\"\\\n"], nil, [1, [true]]]],
                                          "o": ["type": "location", "value": ["lat": 1, "empty": [:], "none": nil, "flag": false]]],
                                 recordChangeTag: "1z", parent: RecordReference(recordName: "p", action: "deleteSelf"),
                                 share: RecordReference(recordName: "s"))
        record.creationDate = 1.5
        record.modificationDate = 2.25
        record.creatorUserRecordName = "c"
        let expected: JSONValue = [
            "recordName": "a", "zoneID": ["zoneName": "Z", "ownerName": .string(ZoneID.defaultOwner)], "recordType": "T",
            "fields": .object(record.fields), "recordChangeTag": "1z", "creationDate": 1.5, "modificationDate": 2.25,
            "creatorUserRecordName": "c", "parent": ["recordName": "p", "action": "deleteSelf"], "share": ["recordName": "s"],
        ]
        #expect(try JSONParser.parse(Array(JSONEncoder().encode(record))) == expected)
        var bare = record
        bare.omitsFields = true
        guard case var .object(withoutFields) = expected else { return }
        withoutFields["fields"] = nil
        #expect(try JSONParser.parse(Array(JSONEncoder().encode(bare))) == .object(withoutFields))

        let page = FetchZoneChangesResult(changed: [record, record], deleted: [DeletedRecord(recordName: "d", recordType: "T")],
                                          token: "z1.2.0", moreComing: true)
        let back = try JSONDecoder().decode(FetchZoneChangesResult.self, from: JSONEncoder().encode(page))
        #expect(back.changed == page.changed && back.deleted == page.deleted && back.token == page.token && back.moreComing)
        let modified = ModifyResult(saved: [record], deleted: [RecordID(recordName: "x", zoneID: ZoneID(zoneName: "Z"))])
        let reply = try JSONParser.parse(Array(JSONEncoder().encode(modified)))
        #expect(reply["saved"] == [expected])
        #expect(reply["deleted"] == [["recordName": "x", "zoneID": ["zoneName": "Z", "ownerName": .string(ZoneID.defaultOwner)]]])
    }

    @Test func fieldsTextSkipsNullsAsIfTheyWereFilteredOut() {
        let fields: [String: JSONValue] = [
            "b": ["type": "string", "value": "x"], "a": nil, "c": ["value": 1, "type": "int64"],
            "d": ["type": "list", "value": [nil, ["value": 2.5, "type": "double"]]], "e": ["value": 1, "note": "n"],
        ]
        let withoutNulls = RecordFields.withoutNulls(fields)
        #expect(withoutNulls.count == 4 && withoutNulls["a"] == nil)
        #expect(RecordFields(fields).text == RecordFields(withoutNulls).text)
        #expect(RecordFields(fields).text
                == #"{"b":{"type":"string","value":"x"},"c":{"type":"int64","value":1},"d":{"type":"list","value":[null,{"type":"double","value":2.5}]},"e":{"note":"n","value":1}}"#)
        #expect(RecordFields.withoutNulls(withoutNulls) == withoutNulls)
    }
}
