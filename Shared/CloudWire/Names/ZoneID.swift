import MeowWire

/// A zone's identity: (zoneName, ownerName). `__defaultOwner__` means the caller: a device
/// names its own zones with it, and the sync-service resolves it to the caller.
public struct ZoneID: Codable, Sendable, Hashable {
    public static let defaultOwner = "__defaultOwner__"
    /// The zone every private database has (`CKRecordZone.default()`).
    public static let defaultZoneName = "_defaultZone"
    /// The zone NSPersistentCloudKitContainer mirrors a private store into.
    public static let coreDataZoneName = "com.apple.coredata.cloudkit.zone"
    /// The caller's Core Data zone.
    public static let coreData = ZoneID(zoneName: coreDataZoneName)

    public var zoneName: String
    public var ownerName: String

    public init(zoneName: String, ownerName: String = ZoneID.defaultOwner) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    public enum CodingKeys: String, CodingKey { case zoneName, ownerName }

    /// Through the one reader (`init(reading:)`).
    public init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try encode(into: &container)
    }

    /// The zone's keys into `c` (its own container, or one nested in a record's).
    public func encode(into c: inout KeyedEncodingContainer<CodingKeys>) throws {
        try c.encode(zoneName, forKey: .zoneName)
        try c.encode(ownerName, forKey: .ownerName)
    }

    /// `{"zoneName":…,"ownerName":…}`.
    public func writeJSON(to out: inout String) {
        var bytes = JSONBytes(capacity: 96)
        writeJSON(to: &bytes)
        bytes.append(to: &out)
    }

    /// The same, as bytes.
    public func writeJSON(to out: inout JSONBytes) {
        out.append(#"{"zoneName":"#); out.append(string: zoneName)
        out.append(#","ownerName":"#); out.append(string: ownerName)
        out.append("}")
    }
}

extension ZoneID: JSONReadable {
    /// Other members are skipped; an absent or null owner is the default one.
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var name: String?, owner: String?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "zoneName": name = try reader.string()
            case "ownerName": owner = try reader.optionalString()
            default: try reader.skip()
            }
        }
        guard let name else { throw reader.missing("zoneName") }
        self.init(zoneName: name, ownerName: owner ?? ZoneID.defaultOwner)
    }
}
