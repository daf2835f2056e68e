import Foundation
import MeowWire

/// examples/TripLog and one trip → day → photo with a value of every attribute type: the values
/// the TripLog tests of every test target save and compare.
public enum TripLogSample {
    public static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/TripLog").path
    public static let jsonModel = examples + "/TripLog.json"
    public static let xcodeModel = examples + "/TripLog.xcdatamodeld"

    /// 300 bytes: over a 64-byte `--asset-threshold`, so it travels as an asset.
    public static let thumbnail = Data((0..<300).map { UInt8($0 % 256) })
    public static let trip: [String: JSONValue] = [
        "id": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "name": "Kyoto in autumn", "startDate": "2026-11-01T00:00:00.000Z",
        "endDate": "2026-11-09T23:59:59.999Z", "budget": "2500.75", "currency": "JPY", "isArchived": false,
    ]
    public static let day: [String: JSONValue] = [
        "id": "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "date": "2026-11-02T00:00:00.000Z", "dayNumber": 2, "distanceKm": 12.5,
        "notes": "Fushimi Inari at dawn",
    ]
    /// fileSize is past 2^53 (exact only as an integer), the thumbnail an asset at threshold 64.
    public static let photo: [String: JSONValue] = [
        "id": "1B4E28BA-2FA1-11D2-883F-0016D3CCA427", "caption": "Torii gates", "takenAt": "2026-11-02T06:12:30.250Z",
        "thumbnail": .string(thumbnail.base64EncodedString()), "sourceURL": "https://example.com/p/1.heic",
        "fileSize": "9007199254740993", "rating": 5, "latitude": 34.967146, "longitude": 135.772695, "metadata": "YnBsaXN0MDDUAQ==",
    ]
}
