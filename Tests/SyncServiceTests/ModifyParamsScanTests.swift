import Foundation
import MeowWire
@testable import SyncServiceKit
import Testing

/// A records.modify request read from its bytes (`ModifyParams(scanning:)`) must be the request
/// the parser and `init(from:)` read, and anything the scanner leaves must go to them.
@Suite("records.modify params read from their bytes")
struct ModifyParamsScanTests {
    /// The params as the service reads them from a tree: fields in stored form kept as text
    /// alone, at the records' depth within the params (the service's own setting is relative
    /// to the whole request, one level up).
    static func viaTree(_ text: String) throws -> ModifyParams {
        let kept = JSONParser.KeptText(key: "fields", depth: 3, textOnly: { bytes, start in FieldsJSON.storedFormEnd(bytes, from: start) })
        return try JSONValueDecoder().decode(ModifyParams.self, from: JSONParser.parse(Array(text.utf8), keeping: kept))
    }

    static func viaBytes(_ text: String) -> ModifyParams? {
        Array(text.utf8).withUnsafeBufferPointer { ModifyParams.scanned($0) }
    }

    static func summary(_ params: ModifyParams) -> String {
        let saves = (params.saves ?? []).map { record in
            [record.recordName, record.zoneID.zoneName, record.zoneID.ownerName, record.recordType, record.sentFieldsText ?? "-",
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
                #expect(signature != nil && signature == record.sentFieldsText.flatMap(StoredFields.typeSignature), "\(record.recordName)")
            }
        }
        let read = try #require(Self.viaBytes(#"{"database":"private","saves":[\#(record)]}"#))
        #expect(read.saves?.first?.fieldsAreStoredText == true)
        #expect(read.saves?.first?.fields["CD_id"]?["value"] == "e \"1\" é")
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
