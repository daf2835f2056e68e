import CloudWire
import MeowWire
import Testing

@Suite("Record fields' one writer")
struct RecordFieldsTests {
    @Test("field by field, the builder writes what writing the values writes, in stored form")
    func builderMatchesValues() throws {
        let note = RecordFields.Builder.opening(name: "CD_note", type: "string")
        let count = RecordFields.Builder.opening(name: "CD_count", type: "int64")
        let value = RecordFields.Builder.opening(name: "CD_value", type: "double")
        let stamps = RecordFields.Builder.quoted(#"[{"device":"A","fields":["CD_note"],"time":1780000000.5}]"#)
        var builder = RecordFields.Builder()
        builder.open(count); builder.int64(-7); builder.close()
        builder.open(note); builder.string("quote \" line\n\u{1} 貓"); builder.close()
        builder.open(value); builder.double(250.5); builder.close()
        builder.open(RecordFields.Builder.opening(name: "MC_fieldModified", type: "string")); builder.string(quoted: stamps); builder.close()
        let text = builder.finish()
        let values: [String: JSONValue] = [
            "CD_count": ["type": "int64", "value": -7], "CD_note": ["type": "string", "value": "quote \" line\n\u{1} 貓"],
            "CD_value": ["type": "double", "value": 250.5], "CD_gone": nil,
            "MC_fieldModified": ["type": "string", "value": #"[{"device":"A","fields":["CD_note"],"time":1780000000.5}]"#],
        ]
        #expect(text == RecordFields(values).text)
        #expect(RecordFields(validating: text)?.text == text)
        #expect(try JSONParser.parse(text) == .object(RecordFields.withoutNulls(values)))
        var whole = RecordFields.Builder()
        whole.open(value); whole.double(250); whole.close()
        #expect(whole.finish() == #"{"CD_value":{"type":"double","value":250}}"#, "whole doubles as integers")

        var more = try #require(RecordFields.Builder(continuing: text))
        more.field("MC_movedFrom", ["type": "string", "value": "{}"])
        #expect(more.finish() == RecordFields(values.merging(["MC_movedFrom": ["type": "string", "value": "{}"]]) { $1 }).text)
        var empty = try #require(RecordFields.Builder(continuing: "{}"))
        empty.field("a", ["type": "int64", "value": 1])
        #expect(empty.finish() == #"{"a":{"type":"int64","value":1}}"#)
        #expect(RecordFields.Builder(continuing: "[]") == nil)
        #expect(RecordFields([:]).text == "{}")
    }

    @Test("a string value is written as JSONWriter writes it, escapes and all", arguments: [
        "plain", "", "quote \" and \\ backslash", "line\nfeed\ttab\r\u{1}\u{1F}", "a/slash", "貓 🐈 é", "\u{7F}\u{2028}",
    ])
    func stringsAsTheWriterWritesThem(value: String) throws {
        let opening = RecordFields.Builder.opening(name: "CD_s", type: "string")
        var builder = RecordFields.Builder()
        builder.open(opening); builder.string(value); builder.close()
        var expected = #"{"CD_s":{"type":"string","value":"#
        JSONWriter.appendString(value, to: &expected)
        #expect(builder.finish() == expected + "}}")
        var quoted = RecordFields.Builder()
        quoted.open(opening); quoted.string(quoted: RecordFields.Builder.quoted(value)); quoted.close()
        #expect(quoted.finish() == expected + "}}")
    }
}
