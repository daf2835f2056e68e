import Foundation
import MeowWire
import Testing

@Suite("JSON parser, tree decoder and writer")
struct JSONParserTests {
    @Test("values of every kind parse; integers stay integers, fractions and exponents are doubles")
    func kinds() throws {
        let value = try JSONParser.parse(#" {"a": [1, -2, 3.5, 1e3, true, false, null, "x"], "b": {}, "c": []} "#)
        #expect(value["a"] == [1, -2, 3.5, 1000.0, true, false, nil, "x"])
        if case .double = value["a"]?.arrayValue?[3] {} else { Issue.record("1e3 must be a double") }
        #expect(value["b"] == .object([:]))
        #expect(value["c"] == .array([]))
    }

    @Test("integers at the edges of Int, and past them as doubles")
    func integerEdges() throws {
        #expect(try JSONParser.parse("9223372036854775807") == .int(Int.max))
        #expect(try JSONParser.parse("-9223372036854775808") == .int(Int.min))
        #expect(try JSONParser.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONParser.parse("-0") == .int(0))
    }

    @Test("escapes, surrogate pairs and raw UTF-8 decode to the same text")
    func strings() throws {
        #expect(try JSONParser.parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{C}\n\r\t"))
        #expect(try JSONParser.parse(#""\u00e9\u732b\ud83d\udc08""#) == .string("é猫🐈"))
        #expect(try JSONParser.parse("\"é猫🐈\"") == .string("é猫🐈"))
        #expect(try JSONParser.parse(#""plain \u0041SCII""#) == .string("plain ASCII"))
    }

    @Test("malformed input is refused with the offset of the problem", arguments: [
        "", "   ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "01", "1.", "1e", "-", "+1", ".5", "tru", "nul",
        "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\tb\"", "1 2", "{} x",
        "1e400", "-1e400", "NaN", "[1] ]",
    ])
    func refused(_ text: String) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(text) }
    }

    @Test("invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xC3, 0x22]) }
    }

    @Test("nesting is limited, so hostile depth cannot exhaust the stack")
    func depth() throws {
        let ok = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(deep) }
        let objects = String(repeating: "{\"a\":", count: JSONParser.maxDepth + 1) + "1" + String(repeating: "}", count: JSONParser.maxDepth + 1)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(objects) }
    }

    @Test("the parser agrees with Foundation on valid documents")
    func agreesWithFoundation() throws {
        let documents = [
            #"{"id":1,"op":"object.insert","params":{"objects":[{"entity":"CareEvent","values":{"value":120.5,"note":"before \"breakfast\"","session":null}}]}}"#,
            #"[0, -1, 2.25, 1.5e-3, "\u00e9", {"nested": [[], {}]}]"#,
        ]
        for text in documents {
            let ours = try JSONParser.parse(text)
            let theirs = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            #expect(ours == theirs)
        }
    }

    struct Params: Decodable, Equatable {
        enum Kind: String, Decodable { case a, b }
        var name: String
        var count: Int
        var ratio: Double
        var flag: Bool?
        var kind: Kind
        var tags: [String]
        var extra: JSONValue?
        var nested: [String: Int]
    }

    @Test("typed values decode from the tree; JSONValue fields are taken as they are")
    func typedDecoding() throws {
        let value = try JSONParser.parse(#"{"name":"n","count":3,"ratio":2,"kind":"b","tags":["x","y"],"extra":{"any":[1,"two"]},"nested":{"k":7}}"#)
        let params = try JSONValueDecoder().decode(Params.self, from: value)
        #expect(params == Params(name: "n", count: 3, ratio: 2, flag: nil, kind: .b, tags: ["x", "y"],
                                 extra: ["any": [1, "two"]], nested: ["k": 7]))
    }

    @Test("decoding errors carry the path of the field, as Foundation's do")
    func decodingErrors() throws {
        func failure(_ text: String) throws -> DecodingError? {
            do {
                _ = try JSONValueDecoder().decode(Params.self, from: JSONParser.parse(text))
                return nil
            } catch let error as DecodingError { return error }
        }
        let base = #""name":"n","ratio":1,"kind":"a","tags":[],"nested":{}"#
        guard case let .keyNotFound(key, _)? = try failure("{\(base)}") else { Issue.record("missing count"); return }
        #expect(key.stringValue == "count")
        guard case let .typeMismatch(_, context)? = try failure(#"{\#(base),"count":"3"}"#) else { Issue.record("count as string"); return }
        #expect(context.codingPath.map(\.stringValue) == ["count"])
        guard case let .valueNotFound(_, context)? = try failure(#"{\#(base),"count":null}"#) else { Issue.record("count null"); return }
        #expect(context.codingPath.map(\.stringValue) == ["count"])
        guard case let .typeMismatch(_, context)? = try failure(#"{"name":"n","count":1,"ratio":1,"kind":"a","tags":["x",2],"nested":{}}"#) else {
            Issue.record("tags[1]"); return
        }
        #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["tags", "1"])
        guard case .dataCorrupted? = try failure(#"{\#(base),"count":1.5}"#) else { Issue.record("1.5 as Int"); return }
        guard case .dataCorrupted? = try failure(#"{"name":"n","count":1,"ratio":1,"kind":"c","tags":[],"nested":{}}"#) else {
            Issue.record("unknown enum case"); return
        }
    }

    @Test("whole doubles decode as integers, integers as doubles")
    func numberConversions() throws {
        #expect(try JSONValueDecoder().decode(Int.self, from: .double(42)) == 42)
        #expect(try JSONValueDecoder().decode(Double.self, from: .int(42)) == 42)
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(UInt8.self, from: .int(300)) }
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(Int.self, from: .double(1e30)) }
    }

    @Test("the writer's text parses back to the same value, with escapes")
    func writerRoundTrip() throws {
        let value: JSONValue = ["s": "quote \" backslash \\ newline \n tab \t bell \u{7} é 🐈", "n": -12, "d": 0.1, "b": false,
                                "z": nil, "a": [1, [2, ["deep"]]], "o": ["k": "v"]]
        let text = JSONWriter.text(value)
        #expect(try JSONParser.parse(text) == value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) == value)
        #expect(JSONWriter.text(["b": 1, "a": 2]) == #"{"a":2,"b":1}"#)
        #expect(JSONWriter.text(.double(.infinity)) == "null")
    }
}
