import MeowWire

/// records.fetch: records by ID.
public struct FetchRecordsParams: Codable, Sendable {
    public var database: DatabaseScope
    public var recordIDs: [RecordID]
    public init(database: DatabaseScope, recordIDs: [RecordID]) {
        self.database = database
        self.recordIDs = recordIDs
    }
}

public struct FetchRecordsResult: Codable, Sendable {
    public var records: [CloudRecord]

    enum CodingKeys: String, CodingKey { case records }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        var nested = c.nestedUnkeyedContainer(forKey: .records)
        try CloudRecord.encode(records, into: &nested)
    }

    public init(records: [CloudRecord]) {
        self.records = records
    }
}
