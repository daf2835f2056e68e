import CloudWire
import MeowWire
import Testing

@Suite("Record fields read from stored-form text")
struct StoredFieldsTests {
    /// Writes `fields` as the sync-service's canonical writer does (sorted keys, `type` before
    /// `value`, its escapes, whole doubles below 1e15 as integers).
    static func storedForm(_ fields: [(name: String, type: String, value: JSONValue)]) -> String {
        func quote(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case let control where control.value < 0x20: out += "\\u00" + (control.value < 0x10 ? "0" : "") + String(control.value, radix: 16)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        func number(_ value: JSONValue) -> String {
            switch value {
            case let .int(integer): return String(integer)
            case let .double(double): return double.rounded() == double && abs(double) < 1e15 ? String(Int64(double)) : double.description
            default: return "null"
            }
        }
        let members = fields.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }.map { field in
            let value = field.value.stringValue.map(quote) ?? number(field.value)
            return "\(quote(field.name)):{\"type\":\(quote(field.type)),\"value\":\(value)}"
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    @Test("Random fields read from their text exactly as a JSON parse gives them, in key order")
    func readsWhatAParseGives() throws {
        var random = SplitMix64(state: 2026_11_30)
        let pieces = ["a", "Z", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{01}", "\u{1F}", "\u{7F}", "é", "猫", "🐈", "\u{2028}", "0", "-"]
        let base64 = Array("ABCXYZabcxyz0189+/")
        for round in 0..<400 {
            var fields: [(name: String, type: String, value: JSONValue)] = []
            for index in 0..<Int.random(in: 0...9, using: &random) {
                let name = "CD_f\(index)_\(Int.random(in: 0...99, using: &random))"
                guard !fields.contains(where: { $0.name == name }) else { continue }
                switch Int.random(in: 0...4, using: &random) {
                case 0, 1:
                    if round % 7 == 0 {
                        // Bytes are base64 text (FieldValueRules), padded to a multiple of four.
                        let digits = (0..<(4 * Int.random(in: 0...4, using: &random))).map { _ in base64.randomElement(using: &random)! }
                        let padding = digits.isEmpty ? 0 : Int.random(in: 0...2, using: &random)
                        fields.append((name, "bytes", .string(String(digits.dropLast(padding)) + String(repeating: "=", count: padding))))
                        continue
                    }
                    let text = (0..<Int.random(in: 0...12, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
                    fields.append((name, "string", .string(text)))
                case 2: fields.append((name, "int64", .int(Int.random(in: -999_999_999_999...999_999_999_999, using: &random))))
                case 3: fields.append((name, "date", .double(Double(Int.random(in: 0...2_000_000_000_000, using: &random)) / 1000)))
                default:
                    let double = [2.5, -0.125, 1e-7, 1e21, -3.0e-300, 0, 42, 1796025600.123][Int.random(in: 0...7, using: &random)]
                    fields.append((name, "double", .double(double)))
                }
            }
            let text = Self.storedForm(fields)
            let read = try #require(StoredFields.fields(text), "\(text)")
            let parsed = try #require(try JSONParser.parse(text).objectValue)
            #expect(read.map(\.name) == parsed.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, "\(text)")
            for field in read {
                #expect(parsed[field.name]?["type"] == .string(field.type), "\(text)")
                #expect(parsed[field.name]?["value"] == field.value, "\(field.name) in \(text)")
            }
        }
    }

    @Test("The fields changed between two stored-form texts are the ones whose parsed values differ")
    func changedNamesAgreeWithParsedValues() throws {
        var random = SplitMix64(state: 2026_12_06)
        let values: [(type: String, value: JSONValue)] = [("string", "a"), ("string", "b"), ("string", "猫\n"), ("int64", .int(1)), ("int64", .int(2)),
                                                          ("double", .double(2.5)), ("date", .double(1796025600.123)), ("double", .double(1))]
        func randomFields() -> [(name: String, type: String, value: JSONValue)] {
            (0..<6).compactMap { index in
                guard Bool.random(using: &random) else { return nil }
                let pick = values[Int.random(in: 0..<values.count, using: &random)]
                return ("CD_f\(index)", pick.type, pick.value)
            }
        }
        for _ in 0..<300 {
            let (before, after) = (Self.storedForm(randomFields()), Self.storedForm(randomFields()))
            let old = try #require(try JSONParser.parse(before).objectValue), new = try #require(try JSONParser.parse(after).objectValue)
            let expected = Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }.sorted()
            #expect(StoredFields.changedNames(from: before, to: after) == expected, "\(before) → \(after)")
        }
        #expect(StoredFields.changedNames(from: "{}", to: #"{"a":{"type":"string","value":"x"}}"#) == ["a"])
        #expect(StoredFields.changedNames(from: "{}", to: #"{"a":{"type":"reference","value":{"recordName":"x"}}}"#) == nil)
    }

    @Test("Text that is not one object in stored form is not read (callers parse it as JSON)")
    func refusesOtherText() {
        let refused = [
            "", "{", "{} ", " {}", #"{"b":{"type":"string","value":"x"},"a":{"type":"string","value":"y"}}"#,
            #"{"a":{"type":"reference","value":{"recordName":"x"}}}"#, #"{"a":{"value":"x","type":"string"}}"#,
            #"{"a":{"type":"string","value":"\u0041"}}"#, #"{"a":{"type":"double","value":1.50}}"#, #"{"a":{"type":"double","value":2.0}}"#,
            #"{"a": {"type":"string","value":"x"}}"#, #"{"a":{"type":"string","value":"x"}}{}"#,
            // Values outside FieldValueRules: bytes that are not base64, dates outside years 0001–9999.
            #"{"a":{"type":"bytes","value":"not base64!"}}"#, #"{"a":{"type":"bytes","value":"AAE"}}"#, #"{"a":{"type":"bytes","value":"A=AA"}}"#,
            #"{"a":{"type":"date","value":1e+300}}"#, #"{"a":{"type":"date","value":253402300800}}"#, #"{"a":{"type":"date","value":-62135596801}}"#,
        ]
        for text in refused { #expect(StoredFields.fields(text) == nil, "\(text)") }
        #expect(StoredFields.fields("{}") == [])
        #expect(StoredFields.fields(#"{"a":{"type":"int64","value":-7},"b":{"type":"string","value":"\"\\\n\u001f"}}"#)
                == [.init(name: "a", type: "int64", value: .int(-7)), .init(name: "b", type: "string", value: .string("\"\\\n\u{1F}"))])
    }
}
