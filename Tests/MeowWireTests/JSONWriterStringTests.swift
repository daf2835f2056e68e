import Foundation
import MeowWire
import Testing

@Suite("JSONWriter's string literals")
struct JSONWriterStringTests {
    static let samples = ["", "plain", "quote \" and \\ backslash", "line\nfeed\ttab\r\u{8}\u{C}\u{1}\u{1F}", "a/slash/",
                          "貓 🐈 é", "\u{7F}\u{2028}", String(repeating: "x", count: 100) + "\""]

    @Test("Written as bytes or into a String, a literal is the same text, and Foundation reads back the string", arguments: samples)
    func bytesAndTextAgree(value: String) throws {
        for slashes in [false, true] {
            var text = ""
            JSONWriter.appendString(value, to: &text, escapingSlashes: slashes)
            var bytes: [UInt8] = [0x5B]
            JSONWriter.appendString(value, to: &bytes, escapingSlashes: slashes)
            #expect(String(decoding: bytes.dropFirst(), as: UTF8.self) == text)
            #expect(try JSONDecoder().decode(String.self, from: Data(text.utf8)) == value)
            #expect(text.contains("\\/") == (slashes && value.contains("/")))
        }
    }
}
