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

    /// An absent owner is the default one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        zoneName = try container.decode(String.self, forKey: .zoneName)
        ownerName = try container.decodeIfPresent(String.self, forKey: .ownerName) ?? ZoneID.defaultOwner
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try encode(into: &container)
    }

    /// The zone's keys into `c` (its own container, or one nested in a record's).
    public func encode(into c: inout KeyedEncodingContainer<CodingKeys>) throws {
        try c.encode(zoneName, forKey: .zoneName)
        try c.encode(ownerName, forKey: .ownerName)
    }

    /// The zone ID `init(from:)` decodes from `tree`; nil where it would throw (an absent or
    /// null owner is the default one).
    public init?(tree: JSONValue?) {
        guard case let .object(members)? = tree, case let .string(zoneName)? = members["zoneName"] else { return nil }
        switch members["ownerName"] {
        case nil, .null?: self.init(zoneName: zoneName)
        case let .string(owner)?: self.init(zoneName: zoneName, ownerName: owner)
        default: return nil
        }
    }

    /// Reads a zone ID where `scanner` is, as `init(tree:)` reads it from a tree (both services
    /// read one in every record of a hot message; other members are skipped).
    public init?(scanning scanner: inout JSONScanner) {
        var name: String?, owner: String?
        let read = scanner.object { key, scanner in
            switch key {
            case "zoneName": name = scanner.string(); return name != nil
            case "ownerName":
                guard let value = scanner.optionalString() else { return false }
                owner = value
                return true
            default: return scanner.skipValue()
            }
        }
        guard read, let name else { return nil }
        self.init(zoneName: name, ownerName: owner ?? ZoneID.defaultOwner)
    }

    /// `{"zoneName":…,"ownerName":…}`.
    public func writeJSON(to out: inout String) {
        out += #"{"zoneName":"#; JSONWriter.appendString(zoneName, to: &out)
        out += #","ownerName":"#; JSONWriter.appendString(ownerName, to: &out)
        out += "}"
    }
}
