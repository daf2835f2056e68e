import Foundation
import MeowWire
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
}
