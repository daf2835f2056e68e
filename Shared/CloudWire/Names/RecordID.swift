import MeowWire

/// A record's identity in requests: recordName + zoneID.
public struct RecordID: Codable, Sendable, Hashable {
    public var recordName: String
    public var zoneID: ZoneID

    public init(recordName: String, zoneID: ZoneID) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    /// `{"recordName":…,"zoneID":{…}}`.
    public func writeJSON(to out: inout JSONBytes) {
        out.append(#"{"recordName":"#); out.append(string: recordName)
        out.append(#","zoneID":"#); zoneID.writeJSON(to: &out)
        out.append("}")
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
        var bytes = JSONBytes(capacity: 64)
        writeJSON(to: &bytes)
        bytes.append(to: &out)
    }

    /// The same, as bytes.
    public func writeJSON(to out: inout JSONBytes) {
        out.append(#"{"recordName":"#); out.append(string: recordName)
        if let action { out.append(#","action":"#); out.append(string: action) }
        out.append("}")
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
