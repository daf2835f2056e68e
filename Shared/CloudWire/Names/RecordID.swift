import MeowWire

/// A record's identity in requests: recordName + zoneID.
public struct RecordID: Codable, Sendable, Hashable {
    public var recordName: String
    public var zoneID: ZoneID

    public init(recordName: String, zoneID: ZoneID) {
        self.recordName = recordName
        self.zoneID = zoneID
    }
}

/// A reference to another record of the same zone (`parent`, `share`, reference fields).
public struct RecordReference: Codable, Sendable, Hashable {
    public var recordName: String
    public var action: String?

    public init(recordName: String, action: String? = nil) {
        self.recordName = recordName
        self.action = action
    }

    public enum CodingKeys: String, CodingKey { case recordName, action }

    /// Through the one reader (`init(reading:)`).
    public init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try encode(into: &container)
    }

    /// The reference's keys into `c` (its own container, or one nested in a record's).
    public func encode(into c: inout KeyedEncodingContainer<CodingKeys>) throws {
        try c.encode(recordName, forKey: .recordName)
        try c.encodeIfPresent(action, forKey: .action)
    }

    /// `{"recordName":…}`, with `"action"` when it has one.
    public func writeJSON(to out: inout String) {
        out += #"{"recordName":"#; JSONWriter.appendString(recordName, to: &out)
        if let action { out += #","action":"#; JSONWriter.appendString(action, to: &out) }
        out += "}"
    }
}

extension RecordReference: JSONReadable {
    /// Other members are skipped.
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var name: String?, action: String?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "recordName": name = try reader.string()
            case "action": action = try reader.optionalString()
            default: try reader.skip()
            }
        }
        guard let name else { throw reader.missing("recordName") }
        self.init(recordName: name, action: action)
    }
}
