import Foundation
import MeowWire
import Testing

/// `JSONStream` reads what `JSONParser` reads, the same way, whatever the chunks the input comes
/// in: a value split at any byte (inside a string, an escape, a number) reads as one.
@Suite("JSON stream (reading input larger than memory)")
struct JSONStreamTests {
    static func stream(_ text: String, chunk: Int) -> JSONStream {
        let bytes = Array(text.utf8)
        return JSONStream(chunkSize: chunk) { offset, buffer in
            let count = min(buffer.count, max(0, bytes.count - offset))
            for index in 0..<count { buffer[index] = bytes[offset + index] }
            return count
        }
    }

    /// The elements of a top-level array, each read whole.
    static func elements(_ text: String, chunk: Int) throws -> [JSONValue] {
        var stream = stream(text, chunk: chunk)
        var values: [JSONValue] = []
        try stream.beginArray()
        while try stream.nextElement() { values.append(try stream.value()) }
        guard try stream.atEnd else { throw stream.failure("unexpected data after the JSON value") }
        return values
    }

    static let document = #"[ {"a": [1, -2.5e3, true, false, null]}, "x\n\"\\\u00e9猫\ud83d\udc08", 123456789, [[], {}], "", 0, {"k\"": "v"} ]"#

    @Test("Every chunk size reads the same values as the parser", arguments: [1, 2, 3, 5, 8, 13, 64, 1 << 20])
    func chunkSizesAgree(_ chunk: Int) throws {
        let expected = try JSONParser.parse(Self.document).arrayValue
        #expect(try Self.elements(Self.document, chunk: chunk) == expected)
    }

    @Test("Objects are walked member by member; a skipped member is passed whole, and can be read again at its position")
    func membersSkipAndSeek() throws {
        let text = #"{"rows": [[1, "a]}"], [2, "b\"}"]], "name": "n", "after": {"x": [1, {"y": "}"}]}}"#
        for chunk in [1, 4, 7, 1 << 20] {
            var stream = Self.stream(text, chunk: chunk)
            try stream.beginObject()
            var rowsAt: Int?
            var name: String?
            var keys: [String] = []
            while let key = try stream.nextKey() {
                keys.append(key)
                if key == "rows" { rowsAt = stream.position }
                if key == "name", case let .string(text) = try stream.value() { name = text } else if key != "name" { try stream.skipValue() }
            }
            #expect(try stream.atEnd)
            #expect(keys == ["rows", "name", "after"] && name == "n")
            stream.seek(to: try #require(rowsAt))
            #expect(try stream.value() == [[1, "a]}"], [2, "b\"}"]])
        }
    }

    @Test("Malformed or cut input is refused with the offset where it stops, at any chunk size", arguments: [
        "[1,]", "[1 2]", "[\"abc", "[\"a\\", "[tru]", "[1.]", "[{\"a\" 1}]", "[{]", "[01]", "[1", "[\"\\ud800\"]", "[-]",
    ])
    func malformedIsRefused(_ text: String) {
        for chunk in [1, 3, 1 << 20] {
            #expect(throws: JSONParser.Failure.self, "\(text) in chunks of \(chunk)") { try Self.elements(text, chunk: chunk) }
        }
    }

    @Test("A skipped value is checked for structure: unclosed strings and mismatched brackets are refused")
    func skipChecksStructure() {
        for text in ["{\"a\": [1}", "{\"a\": \"x", "{\"a\": ]", "{\"a\": ,, \"b\": 1}", "{\"a\": #}"] {
            var stream = Self.stream(text, chunk: 2)
            #expect(throws: JSONParser.Failure.self, "\(text)") {
                try stream.beginObject()
                while try stream.nextKey() != nil { try stream.skipValue() }
            }
        }
    }
}
