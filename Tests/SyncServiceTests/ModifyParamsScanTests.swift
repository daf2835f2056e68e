import CloudWire
import Foundation
import MeowWire
@testable import SyncServiceKit
import Testing
import TestSupport

/// A records.modify request read from its bytes (`ModifyParams(scanning:)`) must be the request
/// the parser and `init(from:)` read, and anything the scanner leaves must go to them.
@Suite("records.modify params read from their bytes")
struct ModifyParamsScanTests {
    /// The params as the service reads them from a tree: fields in stored form kept as text
    /// alone, at the records' depth within the params (the service's own setting is relative
    /// to the whole request, one level up).
    static func viaTree(_ text: String) throws -> ModifyParams {
        let kept = JSONParser.KeptText(key: "fields", depth: 3, textOnly: { bytes, start in StoredFields.end(bytes, from: start) })
        return try JSONValueDecoder().decode(ModifyParams.self, from: JSONParser.parse(Array(text.utf8), keeping: kept))
    }

    static func viaBytes(_ text: String) -> ModifyParams? {
        Array(text.utf8).withUnsafeBufferPointer { ModifyParams.scanned($0) }
    }

    static func summary(_ params: ModifyParams) -> String {
        let saves = (params.saves ?? []).map { record in
            [record.recordName, record.zoneID.zoneName, record.zoneID.ownerName, record.recordType, record.fieldsText ?? "-",
             "\(record.fieldsAreStoredText)", record.recordChangeTag ?? "-", "\(record.fields.count)"].joined(separator: "|")
        }
        let deletes = (params.deletes ?? []).map { "\($0.recordName)@\($0.zoneID.zoneName)/\($0.zoneID.ownerName)" }
        return "\(params.database) \(saves) \(deletes) \(String(describing: params.atomic)) \(String(describing: params.returnFields)) \(String(describing: params.reply)) \(String(describing: params.savePolicy))"
    }

    static let fields = #"{"CD_id":{"type":"string","value":"e \"1\" é"},"CD_value":{"type":"double","value":120.5}}"#

    @Test("A sync engine's batch read from its bytes is the batch the parser reads: records, kept fields text, tags, deletes, options")
    func batchesMatch() throws {
        let record = #"{"recordName":"E1","zoneID":{"zoneName":"com.apple.coredata.cloudkit.zone","ownerName":"__defaultOwner__"},"recordType":"CD_CareEvent","fields":\#(Self.fields),"recordChangeTag":"7"}"#
        for text in [
            #"{"database":"private","saves":[\#(record)],"deletes":[],"atomic":true,"reply":"tags"}"#,
            #" { "database" : "shared" , "saves" : [ {"recordName":"E2","zoneID":{"zoneName":"share-1","ownerName":"alice"},"recordType":"CD_CareEvent","fields":{},"recordChangeTag":null,"x":[1]} , \#(record) ] , "deletes" : [ {"recordName":"E3","zoneID":{"zoneName":"z"},"y":{}} ] , "returnFields" : false , "other" : null } "#,
            #"{"saves":[],"database":"private","atomic":false,"database":"shared"}"#,
            #"{"database":"private","saves":[{"recordType":"CD_CareSession","fields":{},"zoneID":{"zoneName":"z","ownerName":null},"recordName":"S"}]}"#,
        ] {
            let read = try #require(Self.viaBytes(text), "not read from its bytes: \(text)")
            #expect(Self.summary(read) == Self.summary(try Self.viaTree(text)), "\(text)")
            // The fields' type signatures come from the scan that read them, one per save.
            #expect(read.typeSignatures?.count == read.saves?.count)
            for (record, signature) in zip(read.saves ?? [], read.typeSignatures ?? []) {
                #expect(signature != nil && signature == record.fieldsText.flatMap(StoredFields.typeSignature), "\(record.recordName)")
            }
        }
        let read = try #require(Self.viaBytes(#"{"database":"private","saves":[\#(record)]}"#))
        #expect(read.saves?.first?.fieldsAreStoredText == true)
        #expect(read.saves?.first?.fields["CD_id"]?["value"] == "e \"1\" é")
    }

    /// Random requests of the shapes a client may send, half of them damaged: whatever the
    /// scanner takes, the parser takes too and reads the same.
    @Test("Random and damaged requests: the scanner takes only what the parser reads the same")
    func randomRequests() throws {
        var random = SplitMix64(state: 2026_12_16)
        func pick<T>(_ options: [T]) -> T { options[Int(random.next() % UInt64(options.count))] }
        var taken = 0
        for round in 0..<500 {
            let records = (0..<Int(random.next() % 4)).map { index -> String in
                var members = [#""recordName":"# + pick([#""E\#(index)""#, #""Eé""#, "7"])]
                members.append(#""zoneID":"# + pick([#"{"zoneName":"z"}"#, #"{"zoneName":"z","ownerName":null}"#, #"{"ownerName":"o","zoneName":"s"}"#, #"{"zoneName":1}"#]))
                members.append(#""recordType":"# + pick([#""CD_CareEvent""#, #""T""#, "null"]))
                members.append(#""fields":"# + pick([Self.fields, "{}", #"{"CD_a":{"value":1,"type":"int64"}}"#, "null", #"{"CD_a":{"type":"int64","value":-3}}"#]))
                if random.next() % 2 == 0 { members.append(#""recordChangeTag":"# + pick([#""3""#, "null", "4"])) }
                if random.next() % 4 == 0 { members.append(pick([#""x":[1,{"y":null}]"#, #""creationDate":5"#, #""parent":{"recordName":"p"}"#])) }
                return "{" + members.shuffled(using: &random).joined(separator: ",") + "}"
            }
            var members = [#""database":"# + pick([#""private""#, #""shared""#, #""public""#]), #""saves":[\#(records.joined(separator: ","))]"#]
            if random.next() % 2 == 0 { members.append(#""atomic":"# + pick(["true", "false", #""yes""#])) }
            if random.next() % 2 == 0 { members.append(#""reply":"# + pick([#""tags""#, #""records""#, #""all""#])) }
            if random.next() % 3 == 0 { members.append(#""deletes":[{"recordName":"D","zoneID":{"zoneName":"z"}}]"#) }
            var bytes = Array(("{" + members.shuffled(using: &random).joined(separator: ",") + "}").utf8)
            if round % 2 == 1 { damage(&bytes, random: &random) }
            let text = String(decoding: bytes, as: UTF8.self)
            guard let read = Self.viaBytes(text) else { continue }
            taken += 1
            let parsed = try #require(try? Self.viaTree(text), "the scanner took what the parser refuses: \(text)")
            #expect(Self.summary(read) == Self.summary(parsed), "\(text)")
        }
        #expect(taken > 25, "the scanner should take the well-formed requests of the usual shape")
    }

    @Test("A request the scanner does not take (a save policy, dates, a parent, fields not in stored form, malformed text) is left to the parser", arguments: [
        #"{"database":"private","saves":[],"savePolicy":"allKeys"}"#,
        #"{"database":"private","saves":[{"recordName":"a","zoneID":{"zoneName":"z"},"recordType":"T","fields":{},"creationDate":1}]}"#,
        #"{"database":"private","saves":[{"recordName":"a","zoneID":{"zoneName":"z"},"recordType":"T","fields":{},"parent":{"recordName":"p"}}]}"#,
        #"{"database":"private","saves":[{"recordName":"a","zoneID":{"zoneName":"z"},"recordType":"T","fields":{"CD_a":{"value":1,"type":"int64"}}}]}"#,
        #"{"database":"private","saves":[{"recordName":"a","zoneID":{"zoneName":"z"},"recordType":"T"}]}"#,
        #"{"database":"public","saves":[]}"#,
        #"{"saves":[]}"#,
        #"{"database":"private","saves":[],}"#,
        #"{"database":"private","saves":[]} {}"#,
        #"{"database":"private","atomic":"yes"}"#,
    ])
    func othersAreLeftToTheParser(_ text: String) {
        #expect(Self.viaBytes(text) == nil, "\(text)")
    }
}
