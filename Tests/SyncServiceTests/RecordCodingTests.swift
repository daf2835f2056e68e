import CloudWire
import FoundationEssentials
import MeowWire
import Testing
@testable import SyncServiceKit

/// The fast paths for records on the wire (FieldCoding, CloudRecord(tree:), the nested-container
/// encoding, FieldsJSON's null skipping) give exactly what the plain Codable code gives.
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

    @Test func fieldsFromATreeAreWhatFieldDecodingGives() throws {
        for text in Self.fieldCases {
            let tree = try JSONParser.parse(text)
            let plain = try? JSONValueDecoder().decode([String: FieldDecoding].self, from: tree).mapValues(\.value)
            #expect(FieldCoding.normalized(tree) == plain, "\(text)")
        }
        #expect(FieldCoding.normalized(.array([])) == nil)
        #expect(FieldCoding.normalized(.string("x")) == nil)
    }

    static let recordCases: [String] = [
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"CD_CareEvent"}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z","ownerName":"bob"},"recordType":"T","fields":{"n":{"type":"double","value":1}},"recordChangeTag":"1z","creationDate":5,"modificationDate":6.5,"creatorUserRecordName":"c","lastModifiedUserRecordName":"m","parent":{"recordName":"p"},"share":{"recordName":"s","action":"none"},"unknownKey":[1,2]}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z","ownerName":null},"recordType":"T","fields":null,"recordChangeTag":null,"parent":null,"share":null,"shareInfo":null}"#,
        // The fast path declines these; plain decoding then decodes or throws.
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"cloudkit.share","shareInfo":{"owner":"o","publicPermission":"none","participants":[]}}"#,
        #"{"recordName":5,"zoneID":{"zoneName":"Z"},"recordType":"T"}"#,
        #"{"zoneID":{"zoneName":"Z"},"recordType":"T"}"#,
        #"{"recordName":"a","zoneID":{"ownerName":"o"},"recordType":"T"}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z","ownerName":3},"recordType":"T"}"#,
        #"{"recordName":"a","zoneID":"Z","recordType":"T"}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","fields":{"bad":1}}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","fields":[]}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","recordChangeTag":7}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","creationDate":"now"}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","parent":{"recordName":"p","action":1}}"#,
        #"{"recordName":"a","zoneID":{"zoneName":"Z"},"recordType":"T","share":"s"}"#,
        #"[1]"#,
    ]

    @Test func recordsFromATreeAreWhatTheirDecodingGives() throws {
        for text in Self.recordCases {
            let tree = try JSONParser.parse(text)
            let plain = try? JSONValueDecoder().decode(CloudRecord.self, from: tree)
            if let fast = CloudRecord(tree: tree) {
                #expect(fast == plain, "\(text)")
                // Foundation's decoder (the plain FieldDecoding path) agrees too.
                #expect(fast == (try JSONDecoder().decode(CloudRecord.self, from: Data(text.utf8))), "\(text)")
            } else {
                #expect(plain == nil || plain?.shareInfo != nil, "the fast path declined a plain record: \(text)")
            }
        }
    }

    @Test func modifyParamsDecodeTheSameWithOrWithoutTheFastPath() throws {
        let good = #"{"database":"private","saves":[\#(Self.recordCases[0]),\#(Self.recordCases[1]),\#(Self.recordCases[3])],"returnFields":false}"#
        let params = try JSONValueDecoder().decode(ModifyParams.self, from: try JSONParser.parse(good))
        let plain = try JSONDecoder().decode(ModifyParams.self, from: Data(good.utf8))
        #expect(params.saves == plain.saves)
        #expect(params.saves?.count == 3 && params.returnFields == false && params.database == .private)
        // A bad record anywhere: the plain decoding's error, with its path.
        let bad = #"{"database":"private","saves":[\#(Self.recordCases[0]),\#(Self.recordCases[11])]}"#
        let error = #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(ModifyParams.self, from: try JSONParser.parse(bad)) }
        guard case let .typeMismatch(_, context)? = error else {
            Issue.record("expected typeMismatch, got \(String(describing: error))")
            return
        }
        #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["saves", "1", "recordChangeTag"])
        let nullSaves = try JSONValueDecoder().decode(ModifyParams.self, from: try JSONParser.parse(#"{"database":"shared","saves":null}"#))
        #expect(nullSaves.saves == nil)
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
