import CloudWire
import MeowWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Asset fields (`{"type": "asset", "value": <base64>}`): the asset's data travels with its
/// record, as CKAsset's data does with a CKRecord save. CloudKit's limits apply to them as
/// CloudKit applies them: a record's size leaves its assets out, and each asset has a limit
/// of its own (`CloudLimits.maxAssetBytes`).
enum AssetFields {
    /// Checks each asset field of `fieldsJSON` against the asset limit; returns the bytes of
    /// text they take (not counted against the record's limit).
    static func check(_ fieldsJSON: String, record: String, limits: CloudLimits) throws -> Int {
        // Most records have no asset: a search of the text spares them the parse.
        guard mentionsAsset(fieldsJSON), let fields = try? JSONParser.parse(fieldsJSON).objectValue else { return 0 }
        var textBytes = 0
        for (name, field) in fields where field["type"]?.stringValue == "asset" {
            let text = field["value"]?.stringValue ?? ""
            let dataBytes = text.utf8.count / 4 * 3 - text.utf8.suffix(2).filter { $0 == UInt8(ascii: "=") }.count
            guard dataBytes <= limits.maxAssetBytes else {
                throw WireError(.limitExceeded, "Record '\(record)': the asset in field '\(name)' is \(dataBytes) bytes; an asset may hold at most \(limits.maxAssetBytes).",
                                details: ["field": .string(name), "assetBytes": .int(dataBytes), "maxAssetBytes": .int(limits.maxAssetBytes)])
            }
            // The field's text as stored: its value and the `{"type":"asset","value":""}` around it.
            textBytes += text.utf8.count + name.utf8.count + 30
        }
        return textBytes
    }

    /// Whether the text holds `"asset"`, found by the C library's `strstr` (every saved record's
    /// text is searched; Foundation's `String.contains` bridges to an NSString on Linux). The
    /// text is JSON, which holds no U+0000 but escaped, so the C string is the whole text.
    private static func mentionsAsset(_ text: String) -> Bool {
        text.withCString { strstr($0, #""asset""#) != nil }
    }
}
