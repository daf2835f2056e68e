import Foundation
import MeowWire
import Testing

/// `JSONScanner` takes only what `JSONParser` takes, and reads it the same way: its callers fall
/// back to the parser on anything it refuses, so refusing too much costs time, never meaning.
@Suite("JSON scanner (reading known shapes without a tree)")
struct JSONScannerTests {
    /// Whether the scanner skips `text` as one value with nothing after it.
    static func skips(_ text: String) -> Bool {
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes)
            return scanner.skipValue() && scanner.atEnd
        }
    }

    static func parses(_ text: String) -> Bool { (try? JSONParser.parse(text)) != nil }

    @Test("A value is skipped exactly when the parser takes it", arguments: [
        "", "   ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "01", "1.", "1e", "-", "+1", ".5", "tru", "nul",
        "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\tb\"", "1 2", "{} x",
        "1e400", "-1e400", "NaN", "[1] ]", "[,1]", "{,}", "[1 2]", "{\"a\":1 \"b\":2}", "{\"a\":{}\"b\":1}", "[[]{}]",
        "{}", "[]", " {\"a\" : [ 1 , -2.5e3 , true , false , null , \"x\\n\\u00e9\" ] , \"b\" : { } } ", "[{},{\"c\":[[],[{}]]}]",
        "\"é猫🐈\"", "0", "-0", "1E+2", "123456789012345678901234567890", "\"\\ud83d\\udc08\"", "[\"a\",{\"b\":[null]}]",
    ])
    func skipsWhatTheParserTakes(_ text: String) {
        #expect(Self.skips(text) == Self.parses(text), "\(text)")
    }

    @Test("Random documents and their damaged copies: the scanner and the parser agree on every one")
    func randomDocuments() {
        var random = SplitMix64(state: 2026_12_01)
        let damage: [UInt8] = Array("{}[],:\" \\0-.eE".utf8)
        for round in 0..<600 {
            let value = Self.randomValue(depth: 0, random: &random)
            var text = ""
            JSONWriter.append(value, to: &text)
            #expect(Self.skips(text), "\(text)")
            var bytes = Array(text.utf8)
            if round % 2 == 0, !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0...2, using: &random) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(damage.randomElement(using: &random)!, at: at)
                default: bytes[at] = damage.randomElement(using: &random)!
                }
            }
            let damaged = String(decoding: bytes, as: UTF8.self)
            #expect(Self.skips(damaged) == Self.parses(damaged), "\(damaged)")
        }
    }

    static func randomValue(depth: Int, random: inout SplitMix64) -> JSONValue {
        let pieces = ["a", "é", "猫", "🐈", "\"", "\\", "\n", "\u{01}", "/", " ", "key"]
        switch Int.random(in: 0...(depth > 3 ? 4 : 6), using: &random) {
        case 0: return .int(Int.random(in: -1_000_000...1_000_000, using: &random))
        case 1: return .double(Double(Int.random(in: -99_999...99_999, using: &random)) / 64)
        case 2: return .string((0..<Int.random(in: 0...5, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined())
        case 3: return .bool(Bool.random(using: &random))
        case 4: return .null
        case 5: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(depth: depth + 1, random: &random) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                members[pieces.randomElement(using: &random)! + String(Int.random(in: 0...9, using: &random))] = randomValue(depth: depth + 1, random: &random)
            }
            return .object(members)
        }
    }

    @Test("Walking an object: keys in order, nested containers walked or skipped, commas required between members")
    func walksObjects() {
        let text = #" {"a" : {} , "b":[], "c":[{}, {"d":1, "e":"x"}], "f":"\u00e9\"", "g":true, "h":null, "i":{"j":[1,[2]]}} "#
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes)
            var keys: [String] = []
            var inner: [String] = []
            let r1 = scanner.beginObject()
            #expect(r1)
            while let key = scanner.nextKey() {
                keys.append(key)
                switch key {
                case "c":
                    let r2 = scanner.beginArray()
                    #expect(r2)
                    while scanner.nextElement() {
                        let r3 = scanner.beginObject()
                        #expect(r3)
                        while let member = scanner.nextKey() {
                            inner.append(member)
                            let r4 = scanner.skipValue()
                            #expect(r4)
                        }
                        let r5 = scanner.finishedObject
                        #expect(r5)
                    }
                    let r6 = scanner.finishedArray
                    #expect(r6)
                case "f": let value = scanner.string(); #expect(value == "é\"")
                case "g": let value = scanner.bool(); #expect(value == true)
                case "h": let value = scanner.optionalString(); #expect(value == .some(nil))
                default: let skipped = scanner.skipValue(); #expect(skipped)
                }
            }
            let r7 = scanner.finishedObject
            #expect(r7)
            let r8 = scanner.atEnd
            #expect(r8)
            #expect(keys == ["a", "b", "c", "f", "g", "h", "i"])
            #expect(inner == ["d", "e"])
        }
        for broken in [#"{"a":{}"b":1}"#, #"{"a":1,}"#, #"{"a":[1}"#, #"{"a" 1}"#] {
            Array(broken.utf8).withUnsafeBufferPointer { bytes in
                var scanner = JSONScanner(bytes)
                var clean = scanner.beginObject()
                while clean, scanner.nextKey() != nil { clean = scanner.skipValue() }
                #expect(!(clean && scanner.finishedObject && scanner.atEnd), "\(broken)")
            }
        }
    }

    @Test("Strings read as the parser reads them; anything but a string (or null where allowed) is refused")
    func strings() {
        for text in [#""plain""#, #""a\"b\\c\/d\b\f\n\r\t""#, #""\u00e9\u732b\ud83d\udc08""#, "\"é猫🐈\"", #""""#] {
            Array(text.utf8).withUnsafeBufferPointer { bytes in
                var scanner = JSONScanner(bytes)
                let r9 = scanner.string()
                #expect(r9 == (try? JSONParser.parse(text))?.stringValue, "\(text)")
                let r10 = scanner.atEnd
                #expect(r10)
            }
        }
        for text in ["1", "null", "[\"a\"]", "\"\\ud800\"", "\"a\tb\"", "\"open"] {
            Array(text.utf8).withUnsafeBufferPointer { bytes in
                var scanner = JSONScanner(bytes)
                let r11 = scanner.string()
                #expect(r11 == nil, "\(text)")
            }
        }
        Array("null".utf8).withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes)
            let r12 = scanner.optionalString()
            #expect(r12 == .some(nil))
        }
    }

    @Test("A string's escapes, control bytes, non-ASCII and end are found wherever they stand (the fast path reads eight bytes at a time)")
    func stringSpecialsAtEveryOffset() {
        // (JSON text of the special, its decoded text; nil: the string is refused)
        let specials: [(String, String?)] = [(#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), (#"\u00e9"#, "é"), ("é", "é"),
                                             ("🐈", "🐈"), ("\u{7F}", "\u{7F}"), ("~", "~"), ("\t", nil), ("\u{1F}", nil), ("\u{0}", nil)]
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 24] {
            for offset in 0...length {
                for (json, decoded) in specials {
                    let before = String(repeating: "a", count: offset), after = String(repeating: "b", count: length - offset)
                    let text = "\"" + before + json + after + "\""
                    Array(text.utf8).withUnsafeBufferPointer { bytes in
                        var scanner = JSONScanner(bytes)
                        let read = scanner.string()
                        #expect(read == decoded.map { before + $0 + after }, "\(text.debugDescription)")
                        if decoded != nil {
                            let atEnd = scanner.atEnd
                            #expect(atEnd, "\(text.debugDescription)")
                        }
                    }
                }
                // Unterminated at every length: refused, nothing read past the buffer.
                let open = "\"" + String(repeating: "a", count: length)
                Array(open.utf8).withUnsafeBufferPointer { bytes in
                    var scanner = JSONScanner(bytes)
                    let read = scanner.string()
                    #expect(read == nil, "\(open)")
                }
            }
        }
    }

    @Test("A number is read as the parser reads it; one with a leading zero is refused where it stands")
    func numbers() {
        let cases: [(String, JSONValue?)] = [("0", .int(0)), ("-12", .int(-12)), ("2.5e1", .double(25)), ("9223372036854775808", .double(0x1p63)),
                                             ("-9223372036854775808", .int(Int.min)), ("01", nil), ("1e400", nil), ("-", nil), ("x", nil)]
        for (text, expected) in cases {
            Array(text.utf8).withUnsafeBufferPointer { bytes in
                var scanner = JSONScanner(bytes)
                let number = scanner.number()
                #expect(number == expected, "\(text)")
                #expect(number == (try? JSONParser.parse(text)), "\(text)")
            }
        }
        Array(#"{"a":01}"#.utf8).withUnsafeBufferPointer { bytes in
            var reader = MessageReader(bytes)
            #expect(throws: MessageReadError(path: [.key("a")], problem: .malformed)) {
                try reader.object { (_, reader) throws(MessageReadError) in _ = try reader.int() }
            }
            var scanner = JSONScanner(bytes)
            let skipped = scanner.skipValue()
            #expect(!skipped)
        }
    }

    @Test("A value kept as text: the bytes its end function names, and nothing when it names none")
    func keptText() {
        let text = #"{"fields":{"a":1},"after":2}"#
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes)
            let r13 = scanner.beginObject()
            #expect(r13)
            let r14 = scanner.nextKey()
            #expect(r14 == "fields")
            let kept = scanner.text { bytes, start in
                var probe = JSONScanner(UnsafeBufferPointer(rebasing: bytes[start...]))
                return probe.skipValue() ? start + probe.index : nil
            }
            #expect(kept.map { String(decoding: $0, as: UTF8.self) } == #"{"a":1}"#)
            let r15 = scanner.nextKey()
            #expect(r15 == "after")
            let none = scanner.text { _, _ in nil }
            #expect(none == nil)
        }
    }

    @Test("A reader's path names each key as it was sent, escapes decoded, however deep; given components stay in front")
    func readerPathNamesKeys() {
        let text = #"{"obj\u0065cts":[{"a":1},{"v\u00e9":{"n":"x"}}]}"#
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            var reader = MessageReader(bytes, path: [.key("params")])
            var seen: [[MessagePath.Component]] = []
            #expect(throws: MessageReadError(path: [.key("params"), .key("objects"), .index(1), .key("vé"), .key("n")], problem: .expected(.integer))) {
                try reader.object { (_, reader) throws(MessageReadError) in
                    try reader.array { (reader) throws(MessageReadError) in
                        try reader.object { (_, reader) throws(MessageReadError) in
                            seen.append(reader.path)
                            if reader.scanner.peek() == UInt8(ascii: "{") {
                                try reader.object { (_, reader) throws(MessageReadError) in _ = try reader.int() }
                            } else {
                                _ = try reader.int()
                            }
                        }
                    }
                }
            }
            #expect(seen == [[.key("params"), .key("objects"), .index(0), .key("a")], [.key("params"), .key("objects"), .index(1), .key("vé")]])
        }
    }
}
