import MeowWire

/// The records an item's error carries, as CloudKit's CKError keys them: serverRecordChanged
/// carries the server's record, the client's and their ancestor (null when the server no longer
/// has the version the client's tag names); serverRejectedRequest (a save without a tag of a
/// record the server has) the server's alone.
public struct RecordConflict: Sendable {
    /// The details' keys of the records, in the order they are written.
    public static let keys = ["serverRecord", "clientRecord", "ancestorRecord"]

    public var server: CloudRecord
    /// serverRecordChanged only.
    public var client: CloudRecord?
    public var ancestor: CloudRecord?

    /// serverRecordChanged's records.
    public init(server: CloudRecord, client: CloudRecord, ancestor: CloudRecord?) {
        self.server = server
        self.client = client
        self.ancestor = ancestor
    }

    /// serverRejectedRequest's record.
    public init(server: CloudRecord) {
        self.server = server
    }

    /// Reads the records from an error's details (their trees, by the record's reader); nil when
    /// there is no server record that reads (another error, or records the reply left out).
    public init?(details: [String: JSONValue]) {
        guard let server = details["serverRecord"].flatMap({ try? CloudRecord(tree: $0) }) else { return nil }
        self.server = server
        client = details["clientRecord"].flatMap { try? CloudRecord(tree: $0) }
        ancestor = details["ancestorRecord"].flatMap { try? CloudRecord(tree: $0) }
    }

    /// The records as an error's details: the client's and the ancestor (null when unknown)
    /// only with a client record.
    public func details() throws -> [String: JSONValue] {
        var details: [String: JSONValue] = ["serverRecord": try JSONValue(encoding: server)]
        if let client {
            details["clientRecord"] = try JSONValue(encoding: client)
            details["ancestorRecord"] = try ancestor.map { try JSONValue(encoding: $0) } ?? .null
        }
        return details
    }
}
