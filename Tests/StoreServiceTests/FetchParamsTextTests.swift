import Foundation
import MeowWire
@testable import ServiceRuntime
@testable import StoreServiceKit
import StoreWire
import Testing
import TestSupport

/// `fetch`'s and `fetch.count`'s params read from their bytes (FetchRequest+Reading.swift),
/// `fetch.count`'s result written as text, and a store's schema text written from its entities
/// must answer what the Codable and tree forms they replace answer: the same values and text,
/// and for bad params the same first problem in the same words.
@Suite("fetch params, count and schema text without Codable")
struct FetchParamsTextTests {
    private struct Wrapped: Decodable { var params: FetchRequest }

    /// What the registry's tree route answers for `params` (null: none).
    private func decoded(_ params: String) -> Result<FetchRequest, WireError> {
        let parsed = (try? JSONParser.parse(Array(params.utf8))) ?? .object([:])
        let tree: JSONValue = parsed == .null ? .object([:]) : parsed
        do {
            return .success(try JSONValueDecoder().decode(FetchRequest.self, from: tree))
        } catch {
            // Decoded again under `params` to name the field, as the registry does.
            do {
                return .success(try JSONValueDecoder().decode(Wrapped.self, from: ["params": tree]).params)
            } catch {
                return .failure(IncomingRequest.paramsError(error, op: "fetch.count"))
            }
        }
    }

    /// What the bytes reader answers.
    private func read(_ params: String) -> Result<FetchRequest, WireError> {
        do throws(MessageReadError) {
            return .success(try FetchRequest.read(params))
        } catch {
            return .failure(error.wireError(op: "fetch.count"))
        }
    }

    private func same(_ left: Result<FetchRequest, WireError>, _ right: Result<FetchRequest, WireError>) -> Bool {
        switch (left, right) {
        case let (.success(a), .success(b)): return a == b
        case let (.failure(a), .failure(b)): return a.code == b.code && a.message == b.message && a.details == b.details
        default: return false
        }
    }

    @Test("params read from bytes give the Decodable form's values and its first error, word for word",
          arguments: [
              #"{"entity":"CareSession"}"#,
              #"{"entity":"CareEvent","predicate":"value > %@ AND note == %@","arguments":[1,2.5,"x\u00e9\"",null,true,{"a":[1]}],"sortDescriptors":[{"key":"occurredAt","ascending":false},{"key":"id"},{"key":"value","ascending":null,"extra":1}],"limit":10,"offset":2.0,"stores":["private","shared"],"context":"c1","resultFormat":"rows","unknown":{"x":[]}}"#,
              #"{"entity":"A","predicate":null,"arguments":null,"sortDescriptors":null,"limit":null,"offset":null,"stores":null,"context":null,"resultFormat":null}"#,
              #"{"entity":"A","entity":"B"}"#,
              "{}", "null", "[]", "7", #""entity""#,
              #"{"entity":null}"#, #"{"entity":5}"#, #"{"predicate":5}"#,
              #"{"entity":"A","predicate":5,"limit":"x"}"#,
              #"{"entity":"A","arguments":{"a":1}}"#, #"{"entity":"A","arguments":"x"}"#,
              #"{"entity":"A","sortDescriptors":{}}"#, #"{"entity":"A","sortDescriptors":[5]}"#, #"{"entity":"A","sortDescriptors":[null]}"#,
              #"{"entity":"A","sortDescriptors":[{"ascending":true}]}"#, #"{"entity":"A","sortDescriptors":[{"key":"a"},{"key":null}]}"#,
              #"{"entity":"A","sortDescriptors":[{"key":"a","ascending":"yes"}],"limit":"x"}"#,
              #"{"entity":"A","limit":1.5}"#, #"{"entity":"A","limit":99999999999999999999}"#, #"{"entity":"A","limit":-3,"offset":true}"#,
              #"{"entity":"A","offset":"1"}"#, #"{"entity":"A","stores":"private"}"#, #"{"entity":"A","stores":["private",7]}"#,
              #"{"entity":"A","stores":[null]}"#, #"{"entity":"A","context":[]}"#,
              #"{"entity":"A","resultFormat":"table"}"#, #"{"entity":"A","resultFormat":1}"#,
              #"{"entity":"A","resultFormat":"objects","context":1,"stores":2}"#,
          ])
    func paramsReadAsDecoded(params: String) {
        let byReader = read(params), byDecoder = decoded(params)
        #expect(same(byReader, byDecoder), "\(params): read \(byReader), decoded \(byDecoder)")
    }

    @Test("fetch.count's own text is the text JSONTextEncoder writes for it")
    func countTextAsEncoded() throws {
        for count in [0, 1, 42, -7, Int.max, Int.min] {
            var text = ""
            #expect(CountResult(count: count).writeJSON(to: &text))
            #expect(text == (try JSONTextEncoder().text(CountResult(count: count))))
        }
    }

    @Test("a store's schema text written from its entities is the tree's text, for MeowCare's model and others")
    func schemaTextAsTheTree() throws {
        let other = try ManagedObjectModel.load(json: Data(#"""
            {"name": "Odd", "entities": [
              {"name": "Zeta", "attributes": [{"name": "b", "type": "integer16"}, {"name": "B", "type": "binary"}, {"name": "a_1", "type": "uuid"}],
               "relationships": [{"name": "alphas", "destination": "Alpha", "toMany": true, "inverse": "zeta"},
                                 {"name": "other", "destination": "Alpha", "inverse": "back"}]},
              {"name": "Alpha", "attributes": [],
               "relationships": [{"name": "zeta", "destination": "Zeta", "inverse": "alphas"},
                                 {"name": "back", "destination": "Zeta", "toMany": true, "inverse": "other"}]},
              {"name": "Empty"}],
             "configurations": [{"name": "Private", "scope": "private", "entities": ["Zeta", "Alpha", "Empty"]},
                                {"name": "Shared", "scope": "shared", "entities": []}]}
            """#.utf8))
        for model in [ManagedObjectModel.meowCare(), other] {
            let entities = model.entities
            #expect(StoreMigration.text(of: entities) == StoreMigration.text(of: StoreMigration.schema(of: entities)))
            #expect(StoreMigration.text(of: Array(entities.reversed())) == StoreMigration.text(of: StoreMigration.schema(of: entities)))
        }
    }

    @Test("a store reads fetch.count's params from their bytes and answers as before")
    func countServedThroughTheTextForms() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let all = try await client.call("fetch.count", ["entity": "CareSession"])
        #expect(all["count"]?.intValue != nil)
        let paged = try await client.call("fetch.count", ["entity": "CareSession", "limit": 1, "offset": 3])
        #expect(paged == all)
        let limit = try await client.failure("fetch.count", ["entity": "CareSession", "limit": 1.5])
        #expect(limit.message == "'fetch.count': params.limit: Number 1.5 is not representable as Int.")
        let entity = try await client.failure("fetch", ["sortDescriptors": [["key": "id"]]])
        #expect(entity.code == .missingField)
        #expect(entity.message == "'fetch' needs params.entity.")
        client.close()
        _ = await store.stop()
    }
}
