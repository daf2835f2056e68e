import CloudWire
import Testing

@Suite("CloudKit names")
struct CloudKitNamesTests {
    /// The mapping docs/PROTOCOL.md states, type by type.
    @Test("field types are named as CloudKit names them: date TIMESTAMP, asset ASSETID, others upper-cased, lists by their items' type")
    func typeNames() {
        let expected = ["string": "STRING", "int64": "INT64", "double": "DOUBLE", "date": "TIMESTAMP", "bytes": "BYTES",
                        "reference": "REFERENCE", "asset": "ASSETID", "location": "LOCATION",
                        "list/string": "STRING_LIST", "list/date": "TIMESTAMP_LIST", "list/asset": "ASSETID_LIST"]
        for (wire, cloudKit) in expected { #expect(CloudKitNames.typeName(wire) == cloudKit, "\(wire)") }
    }

    @Test("record names: 1 to 255 ASCII bytes, not starting with an underscore; zone names at most 255 characters")
    func nameRules() {
        #expect(CloudKitNames.problem(recordName: "CD_0193") == nil)
        #expect(CloudKitNames.problem(recordName: String(repeating: "a", count: 255)) == nil)
        #expect(CloudKitNames.problem(recordName: "") != nil)
        #expect(CloudKitNames.problem(recordName: String(repeating: "a", count: 256)) != nil)
        #expect(CloudKitNames.problem(recordName: "é") != nil)
        #expect(CloudKitNames.problem(recordName: "_x") != nil)
        #expect(CloudKitNames.problem(zoneName: String(repeating: "z", count: 255)) == nil)
        #expect(CloudKitNames.problem(zoneName: String(repeating: "z", count: 256)) != nil)
    }
}
