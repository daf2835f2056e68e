import CloudWire
import Foundation
import MeowWire
import Testing

/// records.modify's params written as text (`ModifyParams: JSONTextWritable`) say what their
/// `Encodable` form says.
@Suite("records.modify params written as text")
struct ModifyTextTests {
    static func viaText(_ params: ModifyParams) throws -> JSONValue? {
        var text = ""
        guard params.writeJSON(to: &text) else { return nil }
        return try JSONParser.parse(text)
    }

    static func viaEncoder(_ params: ModifyParams) throws -> JSONValue {
        try JSONParser.parse(Array(JSONEncoder().encode(params)))
    }

    @Test("a device's batch, with fields as text and as values (nulls kept: they remove a key), deletes and options")
    func sameAsEncoder() throws {
        var built = CloudRecord(recordName: "E1", zoneID: .coreData, recordType: "CD_CareEvent", recordChangeTag: "7")
        built.fieldsText = #"{"CD_id":{"type":"string","value":"e \"1\""},"CD_value":{"type":"double","value":120.5}}"#
        let values = CloudRecord(recordName: "E2", zoneID: ZoneID(zoneName: "share-1", ownerName: "alice"), recordType: "CD_CareEvent",
                                 fields: ["CD_note": nil, "CD_value": ["type": "double", "value": 250.0], "CD_at": ["type": "date", "value": 1_780_000_000.5]],
                                 parent: RecordReference(recordName: "S1", action: "none"))
        let deletes = [DeleteItem(recordName: "E3", zoneID: ZoneID(zoneName: "z"))]
        for params in [
            ModifyParams(database: .private, saves: [built, values], deletes: deletes, atomic: true, reply: .tags),
            ModifyParams(database: .shared, saves: [], deletes: [], savePolicy: .changedKeys, atomic: false, returnFields: false, reply: .records),
            ModifyParams(database: .private, deletes: deletes),
        ] {
            let text = try #require(try Self.viaText(params))
            #expect(text == (try Self.viaEncoder(params)))
        }
    }

    @Test("a save with a share's shareInfo is left to the encoder, with nothing written")
    func shareFallsBack() {
        var share = CloudRecord(recordName: CloudKitNames.zoneShareName, zoneID: ZoneID(zoneName: "z"), recordType: CloudKitNames.shareRecordType)
        share.shareInfo = ShareInfo(owner: "o", publicPermission: .none, rootRecordName: nil, participants: [])
        var text = "prefix"
        #expect(!ModifyParams(database: .private, saves: [share]).writeJSON(to: &text))
        #expect(text == "prefix")
    }
}
