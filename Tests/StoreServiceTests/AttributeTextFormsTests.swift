import CloudWire
import Foundation
@testable import StoreServiceKit
import Testing

/// The byte-level readers of the richer types' text (base64, UUIDs, URIs, Integer 64 as text),
/// each held to the rule it implements: `FieldValueRules.isBase64` and Foundation's decoding,
/// Foundation's `UUID(uuidString:)`, the URI rule on characters, and Int64's own parsing.
@Suite("Attribute text forms")
struct AttributeTextFormsTests {
    /// What base64 text was read as before the one-pass decoder: checked by the shared rule,
    /// then decoded by Foundation.
    static func expectedBytes(_ text: String) -> [UInt8]? {
        guard FieldValueRules.isBase64(text) else { return nil }
        return Data(base64Encoded: text).map { [UInt8]($0) }
    }

    @Test("Base64: every text of up to 8 characters from a mixed alphabet is accepted and decoded exactly as before")
    func base64AgreesWithTheRule() {
        // A digit with no low bits and one with them set (unused bits), padding, and bytes
        // outside the alphabet (ASCII and not); two groups, so padding can stand mid-text.
        let alphabet: [String] = ["A", "w", "=", "-", "é"]
        var texts = [""]
        var disagreements: [String] = []
        var accepted = 0
        for _ in 1...8 {
            texts = texts.flatMap { text in alphabet.map { text + $0 } }
            for text in texts {
                let bytes = Base64Text.bytes(text)
                if bytes != Self.expectedBytes(text) { disagreements.append(text) }
                if bytes != nil { accepted += 1 }
            }
        }
        #expect(disagreements.count == 0, "\(disagreements.prefix(20))")
        #expect(accepted > 100, "the alphabet reaches accepted texts too")
    }

    @Test("Base64: refusals by padding, length and alphabet", arguments: [
        "A", "AAE", "AAAAA", "A===", "====", "AA=A", "=AAA", "AAE=AAE=", "AA==AAAA", "AA-A", "AA_A", "AA A", "AAÄ=", "AAAA\n",
    ])
    func base64Refusals(_ text: String) {
        #expect(Base64Text.bytes(text) == nil)
        #expect(!FieldValueRules.isBase64(text))
    }

    @Test("Base64: every byte value round-trips, at every padding, small values and large")
    func base64Bytes() throws {
        // Up to 1 KiB a value is decoded on the stack, past it straight into its array.
        for length in [0, 1, 2, 3, 254, 255, 256, 1023, 1024, 1025, 1026, 5000] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7 + length) }
            let text = Data(bytes).base64EncodedString()
            #expect(Base64Text.bytes(text) == bytes, "\(length) bytes")
        }
        // Unused bits set: read as Foundation reads it.
        let long = String(repeating: "AAAA", count: 400)
        for text in ["QR==", "QUJ=", "AB==", long + "QR==", long + "QUJ="] {
            #expect(Base64Text.bytes(text) == Self.expectedBytes(text), "\(text.suffix(8))")
        }
        // Refusals past 1 KiB as well: a byte outside the alphabet, padding mid-text, bad length.
        for text in [long + "AA-A", long + "AA==" + long, long + "A===", long + "AAE", long + "AAÄ="] {
            #expect(Base64Text.bytes(text) == nil, "\(text.suffix(8))")
            #expect(!FieldValueRules.isBase64(text))
        }
    }

    @Test("UUIDs: upper-case text kept, other spellings as Foundation reads them, one character changed at every place")
    func uuidsAgreeWithFoundation() {
        let canonical = "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"
        #expect(AttributeTypeCoding.canonicalUUID(canonical) == canonical)
        #expect(AttributeTypeCoding.canonicalUUID(canonical.lowercased()) == canonical)
        var disagreements: [String] = []
        let characters = Array(canonical)
        for place in characters.indices {
            for replacement in ["0", "9", "A", "F", "a", "f", "G", "g", "-", "_", " ", "é", ""] {
                var changed = characters
                changed.replaceSubrange(place...place, with: Array(replacement))
                let text = String(changed)
                if AttributeTypeCoding.canonicalUUID(text) != UUID(uuidString: text)?.uuidString { disagreements.append(text) }
            }
        }
        for text in ["", canonical + "0", "E621E1F8C36C495A93FC0C247A3E6E5F", "{\(canonical)}", " \(canonical)"] {
            #expect(AttributeTypeCoding.canonicalUUID(text) == nil, "\(text)")
        }
        #expect(disagreements.count == 0, "\(disagreements.prefix(20))")
    }

    /// The rule Integer 64 text was read by before the byte parser.
    static func expectedWholeNumber(_ text: String) -> Int64? {
        guard text.utf8.count <= 20, text.utf8.dropFirst(text.hasPrefix("-") ? 1 : 0).allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int64(text)
    }

    @Test("Integer 64 text: digits with an optional minus, at most 20 bytes, within 64 bits", arguments: [
        ("0", Int64?.some(0)), ("-0", 0), ("007", 7), ("9007199254740993", 9_007_199_254_740_993),
        ("9223372036854775807", .max), ("-9223372036854775808", .min), ("00000000000000000001", 1),
        ("9223372036854775808", nil), ("-9223372036854775809", nil), ("99999999999999999999", nil),
        ("000000000000000000001", nil), ("", nil), ("-", nil), ("--1", nil), ("+1", nil), (" 1", nil), ("1 ", nil),
        ("1.0", nil), ("1e3", nil), ("0x1F", nil), ("١٢", nil), ("1-", nil),
    ])
    func wholeNumberText(_ text: String, _ expected: Int64?) {
        #expect(AttributeTypeCoding.wholeNumber(.string(text)) == expected)
        #expect(Self.expectedWholeNumber(text) == expected, "the rule as it was")
    }

    @Test("URIs: the byte test agrees with the rule on characters wherever the text is not ASCII, and refuses what it refused", arguments: [
        ("https://example.com/a?b=c", true), ("h:x", true), ("a+b-c.d9:rest", true), ("x:", true), ("https://example.com/café", true),
        ("mailto:é@example.com", true), ("no scheme here", false), ("https://example.com/a b", false), ("https://example.com/\t", false),
        ("1http://x", false), (":x", false), ("ht tp://x", false), ("é://x", false), ("https://example.com/\u{00A0}", false),
        ("https://example.com/\u{2028}", false), ("ht_tp://x", false), ("https", false), ("", false), ("ht tp://é", false),
        ("h:\u{301}x", false), ("a\u{301}b:x", false), ("https:/\r\n/x", false), ("+a:x", false),
    ])
    func uris(_ text: String, _ accepted: Bool) {
        #expect(AttributeTypeCoding.isAbsoluteURI(text) == accepted)
    }
}
