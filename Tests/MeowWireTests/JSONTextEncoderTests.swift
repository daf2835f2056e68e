import Foundation
@testable import MeowWire
import Testing

/// `JSONTextEncoder` replaced Foundation's `JSONEncoder` at every site whose text clients, logs
/// and docs show: with the same options it writes the same bytes, so those outputs are unchanged.
@Suite("JSON text encoder (typed values through the package's writer)")
struct JSONTextEncoderTests {
    struct Inner: Codable, Equatable { var name = "a/b \"q\" \\ \n\t\u{8}\u{c}\u{1}\u{7f}\u{2028}é"; var empty: [Int] = []; var none: [String: Int] = [:] }
    struct Sample: Codable, Equatable {
        var whole = 1.0
        var tenth = 0.1
        var big = 1e20
        var huge = 123456789012345680.0
        var tiny = Double.leastNonzeroMagnitude
        var negativeZero = -0.0
        var float = Float(0.1)
        var int = -42
        var uint8 = UInt8(200)
        var flag = true
        var missing: Int? = nil
        var present: Int? = 3
        var date = Date(timeIntervalSinceReferenceDate: 1.5)
        var data = Data([1, 2, 3])
        var url = URL(string: "http://example.com/a")!
        var nested = [Inner(), Inner(name: "x", empty: [1, 2], none: ["k": 1])]
        var map = ["b": [1.5, 2], "a": []]
        var json: JSONValue = ["z": 1, "y": [true, .null, "s"], "x": .double(2.0)]
    }

    static func foundation(_ value: some Encodable, _ formatting: JSONEncoder.OutputFormatting) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test("Sorted, compact: the same bytes as JSONEncoder (logs, request log, meowctl's compact output)")
    func sortedCompact() throws {
        #expect(try JSONTextEncoder(options: .sortedKeys).text(Sample()) == Self.foundation(Sample(), [.sortedKeys, .withoutEscapingSlashes]))
    }

    @Test("Pretty: the same bytes as JSONEncoder (meowctl --json), empty containers included")
    func pretty() throws {
        #expect(try JSONTextEncoder(options: [.prettyPrinted, .sortedKeys]).text(Sample())
            == Self.foundation(Sample(), [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
        #expect(try JSONTextEncoder(options: .prettyPrinted).text([Int]()) == "[\n\n]")
    }

    @Test("Escaping slashes: the same bytes as JSONEncoder's default escaping")
    func slashes() throws {
        #expect(try JSONTextEncoder(options: [.sortedKeys, .escapingSlashes]).text(Sample()) == Self.foundation(Sample(), [.sortedKeys]))
    }

    @Test("Keys come in the order encode(to:) writes them unless sorted")
    func keyOrder() throws {
        struct Ordered: Encodable { var zebra = 1; var apple = 2; var mango = [3] }
        #expect(try JSONTextEncoder().text(Ordered()) == #"{"zebra":1,"apple":2,"mango":[3]}"#)
    }

    @Test("A number JSON cannot hold is an error naming its field")
    func nonFinite() {
        struct Reading: Encodable { var value = Double.nan }
        #expect {
            try JSONTextEncoder().text(Reading())
        } throws: { error in
            guard case let EncodingError.invalidValue(_, context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["value"]
        }
    }

    /// Compact, unsorted text is written straight as `encode(to:)` runs (no tree); the tree
    /// stays the reference, and the way for any value encoded in an order the straight writer
    /// does not follow.
    @Suite("Written straight: the tree's text")
    struct Straight {
        struct Nested: Encodable {
            enum Keys: String, CodingKey { case a, b, c, list }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                var inner = c.nestedContainer(keyedBy: Keys.self, forKey: .a)
                try inner.encode(1, forKey: .b)
                var list = c.nestedUnkeyedContainer(forKey: .list)
                try list.encode("x")
                var element = list.nestedContainer(keyedBy: Keys.self)
                try element.encode(true, forKey: .c)
                try list.encodeNil()
                try c.encode([Int?.none, 2], forKey: .b)
            }
        }
        /// A nested container filled after its parent moved on.
        struct Late: Encodable {
            enum Keys: String, CodingKey { case a, b, c }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                var inner = c.nestedContainer(keyedBy: Keys.self, forKey: .a)
                try c.encode(2, forKey: .b)
                try inner.encode(3, forKey: .c)
            }
        }
        /// A key written twice: first place, last value.
        struct Twice: Encodable {
            enum Keys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                try c.encode(1, forKey: .a)
                try c.encode(2, forKey: .b)
                try c.encode(3, forKey: .a)
            }
        }
        /// A container asked for twice, and a super-encoder.
        struct Again: Encodable {
            enum Keys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                try c.encode(1, forKey: .a)
                var again = encoder.container(keyedBy: Keys.self)
                try again.encode(Inner(), forKey: .b)
            }
        }
        struct Super: Encodable {
            enum Keys: String, CodingKey { case a }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                try c.encode(1, forKey: .a)
                try Inner().encode(to: c.superEncoder())
            }
        }
        struct Many: Encodable {
            var map = Dictionary(uniqueKeysWithValues: (0..<40).map { ("k\($0)", $0) })
            var wrapped: [String: JSONValue] = ["x": ["y": [1, 2.5, "z"]]]
        }

        @Test("Every shape: the same text as the tree writes")
        func sameText() throws {
            func check(_ value: some Encodable) throws {
                #expect(try JSONTextEncoder().text(value) == JSONTextEncoder.treeText(value))
            }
            try check(Sample())
            try check(Nested())
            try check(Many())
            try check(Again())
            try check(Super())
            try check([Sample(), Sample()])
            try check("text")
            try check(Optional<Int>.none)
            #expect(try JSONTextEncoder().text(Nested()) == #"{"a":{"b":1},"list":["x",{"c":true},null],"b":[null,2]}"#)
        }

        @Test("Orders the straight writer does not follow are written by the tree")
        func fallsBack() throws {
            #expect(JSONStreamWriter.text(Late()) == nil)
            #expect(try JSONTextEncoder().text(Late()) == #"{"a":{"c":3},"b":2}"#)
            #expect(JSONStreamWriter.text(Twice()) == nil)
            #expect(try JSONTextEncoder().text(Twice()) == #"{"a":3,"b":2}"#)
            #expect(JSONStreamWriter.text(Super()) == nil)
            #expect(JSONStreamWriter.text(Nested()) != nil)
        }
    }
}
