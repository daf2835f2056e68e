import Foundation
import MeowWire
import ServiceRuntime
@testable import StoreServiceKit
import Testing
import TestSupport

/// Every Core Data attribute type: exact wire forms, Core Data's validation errors, and the
/// Xcode model reader's types and validation settings.
@Suite("Attribute types")
struct AttributeTypeTests {
    /// One entity with an attribute of every type, some with validation settings.
    static let modelJSON = #"""
    {
      "name": "Kinds",
      "entities": [{
        "name": "Sample",
        "attributes": [
          {"name": "small", "type": "integer16"},
          {"name": "medium", "type": "integer32", "minValue": -5, "maxValue": 1000},
          {"name": "large", "type": "integer"},
          {"name": "ratio", "type": "double"},
          {"name": "single", "type": "float"},
          {"name": "price", "type": "decimal", "minValue": "0"},
          {"name": "title", "type": "string", "minLength": 2, "maxLength": 8, "regularExpression": "[A-Z][a-z]*"},
          {"name": "flag", "type": "boolean", "optional": false, "defaultValue": true},
          {"name": "when", "type": "date", "minValue": "2000-01-01T00:00:00Z", "maxValue": "2099-12-31T00:00:00Z"},
          {"name": "blob", "type": "binary", "allowsExternalBinaryDataStorage": true},
          {"name": "ident", "type": "uuid"},
          {"name": "link", "type": "uri"},
          {"name": "extra", "type": "transformable", "valueTransformerName": "NSSecureUnarchiveFromData"},
          {"name": "code", "type": "string", "optional": false}
        ]
      }],
      "configurations": [
        {"name": "Private", "scope": "private", "entities": ["Sample"]},
        {"name": "Shared", "scope": "shared", "entities": ["Sample"]}
      ]
    }
    """#

    static func start() async throws -> (StoreFixture, StoreClient) {
        let directory = TemporaryDirectory()
        let path = directory.file("kinds.json")
        try modelJSON.write(toFile: path, atomically: true, encoding: .utf8)
        let store = try await StoreFixture.start(["--model", path], directory: directory)
        return (store, try await store.client())
    }

    static let exactValues: [String: JSONValue] = [
        "small": -32768, "medium": 1000, "large": "9007199254740993", "ratio": 0.1, "single": 1.5,
        "price": "12345678901234567890.123456789", "title": "Paris", "when": "2026-07-27T09:30:00.125Z",
        "blob": "AAEC/f7/", "ident": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "link": "https://example.com/a?b=c",
        "extra": "YnBsaXN0MDA=", "code": "k1",
    ]

    @Test("Every type's value comes back exactly as it went in (Integer 64 past 2^53 as text)")
    func valuesRoundTrip() async throws {
        let (store, client) = try await Self.start()
        defer { Task { _ = await store.stop() } }
        let context = try await client.openContext()
        try await client.call("object.insert", ["context": .string(context), "entity": "Sample", "values": .object(Self.exactValues)])
        _ = try await client.save(context)
        let fetched = try await client.call("fetch", ["entity": "Sample"])
        let object = try #require(fetched["objects"]?.arrayValue?.first)
        for (key, value) in Self.exactValues {
            #expect(object["values"]?[key] ?? object[key] == value, "\(key)")
        }
        #expect((object["values"]?["flag"] ?? object["flag"]) == true, "the default applies")
    }

    @Test("Predicates compare the new types as values: decimals as numbers, UUIDs in any case, bounds not applied to literals")
    func predicatesCompareValues() async throws {
        let (store, client) = try await Self.start()
        defer { Task { _ = await store.stop() } }
        let context = try await client.openContext()
        for (code, price) in [("a1", "9.5"), ("a2", "100.25"), ("a3", "1000")] {
            try await client.call("object.insert", ["context": .string(context), "entity": "Sample",
                                                    "values": ["code": .string(code), "price": .string(price),
                                                               "ident": code == "a2" ? "E621E1F8-C36C-495A-93FC-0C247A3E6E5F" : .null]])
        }
        _ = try await client.save(context)
        func codes(_ predicate: String) async throws -> [String] {
            let fetched = try await client.call("fetch", ["entity": "Sample", "predicate": .string(predicate),
                                                          "sortDescriptors": [["key": "code", "ascending": true]]])
            return fetched["objects"]?.arrayValue?.compactMap { $0["values"]?["code"]?.stringValue } ?? []
        }
        #expect(try await codes("price > '10'") == ["a2", "a3"])
        #expect(try await codes("price == '100.250'") == ["a2"])
        #expect(try await codes("ident == 'e621e1f8-c36c-495a-93fc-0c247a3e6e5f'") == ["a2"])
        #expect(try await codes("medium > 5000").isEmpty, "a literal past maxValue is a comparison, not an error")
        let byPrice = try await client.call("fetch", ["entity": "Sample", "sortDescriptors": [["key": "price", "ascending": false]]])
        #expect(byPrice["objects"]?.arrayValue?.compactMap { $0["values"]?["price"]?.stringValue } == ["1000", "100.25", "9.5"],
                "decimals sort as numbers, and come back as their text")
    }

    @Test("Values are kept in their type's canonical form: upper-case UUIDs, Decimal's text, the nearest Float")
    func canonicalForms() throws {
        let model = try ManagedObjectModel.load(json: Data(Self.modelJSON.utf8))
        let entity = try #require(model.entity(named: "Sample"))
        func stored(_ name: String, _ value: JSONValue) throws -> JSONValue {
            let attribute = try #require(entity.attribute(name))
            return AttributeCoding.jsonValue(try AttributeCoding.storageValue(value, for: attribute, entity: "Sample"), type: attribute.type)
        }
        #expect(try stored("ident", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f") == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(try stored("price", "012.50") == "12.5")
        #expect(try stored("single", 0.1) == .double(Double(Float(0.1))))
        #expect(try stored("large", .int(Int(Int64.min))) == .string(String(Int64.min)))
        #expect(try stored("large", 42) == 42)
    }

    /// The code and Core Data number a value gets refused with.
    static func refusal(_ name: String, _ value: JSONValue) throws -> (code: ErrorCode, number: Int?, message: String) {
        let model = try ManagedObjectModel.load(json: Data(modelJSON.utf8))
        let attribute = try #require(model.entity(named: "Sample")?.attribute(name))
        do {
            _ = try AttributeCoding.storageValue(value, for: attribute, entity: "Sample")
            throw TestFailure("\(name) = \(value) was accepted")
        } catch let error as ServiceError {
            return (error.wire.code, error.wire.details["coreDataCode"]?.intValue, error.wire.message)
        }
    }

    @Test("Core Data's validation errors, each naming the entity and the property", arguments: [
        ("small", JSONValue.int(32768), ErrorCode.validationNumberTooLarge, 1610),
        ("small", JSONValue.int(-32769), ErrorCode.validationNumberTooSmall, 1620),
        ("medium", JSONValue.int(1001), ErrorCode.validationNumberTooLarge, 1610),
        ("medium", JSONValue.int(-6), ErrorCode.validationNumberTooSmall, 1620),
        ("single", JSONValue.double(1e39), ErrorCode.validationNumberTooLarge, 1610),
        ("price", JSONValue.string("-0.01"), ErrorCode.validationNumberTooSmall, 1620),
        ("price", JSONValue.string("12.5abc"), ErrorCode.validationInvalidValue, 1550),
        ("title", JSONValue.string("Montpellier"), ErrorCode.validationStringTooLong, 1660),
        ("title", JSONValue.string("P"), ErrorCode.validationStringTooShort, 1670),
        ("title", JSONValue.string("paris"), ErrorCode.validationStringPatternMatching, 1680),
        ("when", JSONValue.string("2100-01-01T00:00:00Z"), ErrorCode.validationDateTooLate, 1630),
        ("when", JSONValue.string("1999-12-31T23:59:59Z"), ErrorCode.validationDateTooSoon, 1640),
        ("blob", JSONValue.string("not base64!"), ErrorCode.validationInvalidValue, 1550),
        ("ident", JSONValue.string("not-a-uuid"), ErrorCode.validationInvalidValue, 1550),
        ("link", JSONValue.string("no scheme here"), ErrorCode.validationInvalidValue, 1550),
        ("large", JSONValue.string("99999999999999999999"), ErrorCode.validationInvalidValue, 1550),
    ])
    func validationErrors(name: String, value: JSONValue, code: ErrorCode, number: Int) throws {
        let refused = try Self.refusal(name, value)
        #expect(refused.code == code)
        #expect(refused.number == number)
        #expect(refused.message.hasPrefix("Sample.\(name): "), "\(refused.message)")
    }

    @Test("A mandatory attribute left nil fails the save with 1570, naming it")
    func missingMandatory() async throws {
        let (store, client) = try await Self.start()
        defer { Task { _ = await store.stop() } }
        let context = try await client.openContext()
        try await client.call("object.insert", ["context": .string(context), "entity": "Sample", "values": ["title": "Rome"]])
        let error = try await client.failure("context.save", ["context": .string(context)])
        #expect(error.code == .validationMissingMandatoryProperty)
        #expect(error.message.contains("code"))
    }

    @Test("Bad validation settings in a model are refused, naming the entity and attribute")
    func badSettings() throws {
        func error(_ attribute: String) -> String? {
            let text = Self.modelJSON.replacingOccurrences(of: #"{"name": "code", "type": "string", "optional": false}"#, with: attribute)
            do { _ = try ManagedObjectModel.load(json: Data(text.utf8)); return nil } catch { return error.message }
        }
        #expect(error(#"{"name": "code", "type": "integer", "maxLength": 3}"#)?.contains("Sample.code: minLength, maxLength") == true)
        #expect(error(#"{"name": "code", "type": "string", "regularExpression": "(["}"#)?.contains("Sample.code: the regular expression") == true)
        #expect(error(#"{"name": "code", "type": "date", "minValue": 3}"#)?.contains("Sample.code: minValue 3 is not a bound") == true)
        #expect(error(#"{"name": "code", "type": "integer16", "defaultValue": 70000}"#)?.contains("Sample.code: the default value 70000") == true)
        #expect(error(#"{"name": "code", "type": "string", "allowsExternalBinaryDataStorage": true}"#)?.contains("allowsExternalBinaryDataStorage") == true)
    }

    @Test("The Xcode reader knows every type and the validation settings of the attribute inspector")
    func xcodeTypesAndSettings() throws {
        let files = XcodeModelFiles()
        let model = try files.load("""
            <entity name="Sample" representedClassName="Sample" syncable="YES" codeGenerationType="class">
                <attribute name="a16" optional="YES" attributeType="Integer 16" minValueString="1" maxValueString="366" defaultValueString="1" usesScalarValueType="YES"/>
                <attribute name="a32" optional="YES" attributeType="Integer 32" defaultValueString="0" usesScalarValueType="YES"/>
                <attribute name="a64" optional="YES" attributeType="Integer 64" defaultValueString="0" usesScalarValueType="YES"/>
                <attribute name="dec" optional="YES" attributeType="Decimal" minValueString="0" defaultValueString="0.0"/>
                <attribute name="flt" optional="YES" attributeType="Float" defaultValueString="0.0" usesScalarValueType="YES"/>
                <attribute name="name" optional="YES" attributeType="String" minValueString="1" maxValueString="80" regularExpressionString="[A-Za-z ]+"/>
                <attribute name="when" optional="YES" attributeType="Date" minDateTimeInterval="0" maxDateTimeInterval="3155673600" usesScalarValueType="NO"/>
                <attribute name="thumb" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                <attribute name="ident" optional="YES" attributeType="UUID" usesScalarValueType="NO"/>
                <attribute name="link" optional="YES" attributeType="URI"/>
                <attribute name="meta" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData"/>
            </entity>
            """)
        let entity = try #require(model.entity(named: "Sample"))
        #expect(entity.attributes.map(\.type) == [.integer16, .integer32, .integer, .decimal, .float, .string, .date, .binary, .uuid, .uri, .transformable])
        #expect(entity.attribute("a16")?.constraints == AttributeConstraints(minValue: 1, maxValue: 366))
        #expect(entity.attribute("a16")?.defaultValue == 1)
        #expect(entity.attribute("dec")?.defaultValue == "0.0")
        #expect(entity.attribute("name")?.constraints == AttributeConstraints(minLength: 1, maxLength: 80, regularExpression: "[A-Za-z ]+"))
        #expect(entity.attribute("when")?.constraints.minValue == "2001-01-01T00:00:00.000Z")
        #expect(entity.attribute("when")?.constraints.maxValue == "2101-01-01T00:00:00.000Z")
        #expect(entity.attribute("thumb")?.allowsExternalBinaryDataStorage == true)
        #expect(entity.attribute("meta")?.valueTransformerName == "NSSecureUnarchiveFromData")
        let unknown = files.error("""
            <entity name="Sample" representedClassName="Sample" syncable="YES">
                <attribute name="shape" optional="YES" attributeType="Polygon"/>
            </entity>
            """)
        #expect(unknown?.contains("Sample.shape: unknown attribute type 'Polygon'") == true)
    }
}
