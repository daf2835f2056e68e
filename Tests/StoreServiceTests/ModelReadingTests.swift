import Foundation
import MeowWire
@testable import StoreServiceKit
import Testing
import TestSupport

/// A model's JSON read without Codable (`ModelReading`) must give the model the Decodable forms
/// decode, and give up wherever they refuse, so a bad model file keeps its error's words.
@Suite("Model JSON read without Codable")
struct ModelReadingTests {
    /// The Decodable forms' reading of `text`, nil when they refuse it.
    private func decoded(_ text: String) -> ManagedObjectModel? {
        try? JSONValueDecoder().decode(ManagedObjectModel.self, from: Array(text.utf8))
    }

    /// A model as text (every member, sorted keys), for comparing two readings.
    private func written(_ model: ManagedObjectModel?) throws -> String? {
        try model.map { try JSONTextEncoder(options: .sortedKeys).text($0) }
    }

    private static let tripLog = (try? String(contentsOfFile: TripLogSample.jsonModel, encoding: .utf8)) ?? ""
    private static let tripLogV2 = (try? String(contentsOfFile: TripLogSample.examples + "/TripLog-v2.json", encoding: .utf8)) ?? ""

    @Test("MeowCare's model and the examples read as the Decodable forms decode them")
    func modelsReadAsDecoded() throws {
        for text in [ManagedObjectModel.meowCareJSON, Self.tripLog, Self.tripLogV2] {
            #expect(text.count > 100)
            let read = ModelReading.read(Array(text.utf8))
            #expect(read != nil)
            #expect(try written(read) == written(decoded(text)))
        }
    }

    /// Every member of every kind, nulls, and members neither form knows.
    private static let full = #"""
        {"name": "Full", "extra": [1, {"x": null}], "orphanRepair": null,
         "entities": [
           {"name": "A", "renamingIdentifier": "OldA", "versionHashModifier": null, "indexes": [["b"], ["s"]], "uniquenessConstraints": null,
            "attributes": [
              {"name": "b", "type": "integer16", "optional": false, "defaultValue": 3, "minValue": -2, "maxValue": 9.5, "unknown": true},
              {"name": "s", "type": "string", "optional": null, "defaultValue": null, "allowedValues": ["x", "y\u00e9"], "minLength": 1,
               "maxLength": null, "regularExpression": "^[a-z]+$", "preservesValueInHistoryOnDeletion": true, "renamingIdentifier": "t",
               "versionHashModifier": "v1", "allowsExternalBinaryDataStorage": false, "valueTransformerName": null},
              {"name": "d", "type": "binary", "allowsExternalBinaryDataStorage": true, "valueTransformerName": "T", "minValue": {"a": [1]}}],
            "relationships": [{"name": "bs", "destination": "B", "toMany": true, "inverse": "a", "deleteRule": "cascade", "optional": true,
                               "minCount": 0, "maxCount": 5, "ordered": null, "renamingIdentifier": null, "versionHashModifier": "h"}]},
           {"name": "B", "attributes": null, "relationships": [{"name": "a", "destination": "A", "inverse": "bs", "deleteRule": null}]}],
         "configurations": [{"name": "Private", "scope": "private", "entities": ["A", "B"], "other": 1, "usedWithCloudKit": true},
                            {"name": "Shared", "scope": "shared", "entities": [], "usedWithCloudKit": null}]}
        """#

    @Test("every member, null and unknown members read as decoded")
    func everyMemberReadAsDecoded() throws {
        let read = ModelReading.read(Array(Self.full.utf8))
        #expect(read != nil)
        #expect(try written(read) == written(decoded(Self.full)))
    }

    @Test("the reader gives up wherever the Decodable forms refuse, or convert, or see only a repeated key's last value",
          arguments: [
              "", "[]", "null", #"{"name": "M"}"#, #"{"name": 1, "entities": [], "configurations": []}"#,
              #"{"name": "M", "entities": null, "configurations": []}"#,
              #"{"name": "M", "entities": [{"attributes": []}], "configurations": []}"#,
              #"{"name": "M", "entities": [{"name": "A", "attributes": [{"name": "x", "type": "text"}]}], "configurations": []}"#,
              #"{"name": "M", "entities": [{"name": "A", "attributes": [{"name": "x", "type": null}]}], "configurations": []}"#,
              #"{"name": "M", "entities": [{"name": "A", "attributes": [{"name": "x", "type": "string", "optional": "no"}]}], "configurations": []}"#,
              #"{"name": "M", "entities": [{"name": "A", "attributes": [{"name": "x", "type": "string", "minLength": 1.0}]}], "configurations": []}"#,
              #"{"name": "M", "entities": [{"name": "A", "relationships": [{"name": "r"}]}], "configurations": []}"#,
              #"{"name": "M", "entities": [{"name": "A", "relationships": [{"name": "r", "destination": "A", "deleteRule": "keep"}]}], "configurations": []}"#,
              #"{"name": "M", "entities": [], "configurations": [{"name": "P", "scope": "public", "entities": []}]}"#,
              #"{"name": "M", "entities": [], "configurations": [{"name": "P", "scope": "private"}]}"#,
              #"{"name": "M", "entities": [], "configurations": [], "orphanRepair": {"childEntity": "A"}}"#,
              #"{"name": "M", "entities": [], "configurations": [], "orphanRepair": {"childEntity": "A", "relationship": "r", "parentEntity": "B", "defaultFlag": "f", "defaultValues": []}}"#,
              #"{"name": 1, "name": "M", "entities": [], "configurations": []}"#,
              #"{"name": "M", "entities": [], "configurations": []} x"#,
          ])
    func givesUpWhereDecodingRefusesOrConverts(text: String) throws {
        #expect(ModelReading.read(Array(text.utf8)) == nil, "\(text)")
    }

    @Test("a model the reader gives up on loads or is refused as before, in the same words")
    func loadFallsBackToDecoding() throws {
        // Converted by the decoder: loads.
        let converted = ManagedObjectModel.meowCareJSON.replacingOccurrences(of: #""name": "CareSession","#, with: #""name": "Ignored", "name": "CareSession","#)
        #expect(ModelReading.read(Array(converted.utf8)) == nil)
        #expect(try written(try ManagedObjectModel.load(json: Data(converted.utf8))) == written(ManagedObjectModel.meowCare()))
        // Refused: the decoder's words, led by the entity and property.
        let bad = ManagedObjectModel.meowCareJSON.replacingOccurrences(of: #"{"name": "createdAt", "type": "date"}"#, with: #"{"name": "createdAt", "type": "time"}"#)
        #expect(bad != ManagedObjectModel.meowCareJSON)
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel.load(json: Data(bad.utf8)) }
        #expect(error?.message == "The model file is not a valid model: CareSession.createdAt: entities[0].attributes[2].type: Cannot initialize AttributeType from invalid String value time.")
    }
}
