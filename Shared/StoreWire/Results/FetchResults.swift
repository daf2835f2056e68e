import MeowWire

/// `fetch`'s answer in the `objects` format (the default).
public struct FetchedObjects: Codable, Sendable, Hashable {
    public var objects: [ManagedObject]

    public init(objects: [ManagedObject]) { self.objects = objects }
}

/// `fetch`'s answer in the `rows` format: `columns` names each row's cells
/// (`objectID, store, version, uuid, zone`, then the stored properties). The rows' type is the
/// writer's choice: the service writes its rows straight from the store's, a reader takes them as
/// `[[JSONValue]]`.
public struct FetchedRows<Rows: Sendable>: Sendable {
    public var columns: [String]
    public var rows: Rows

    public init(columns: [String], rows: Rows) {
        self.columns = columns
        self.rows = rows
    }

    enum CodingKeys: String, CodingKey { case columns, rows }
}

extension FetchedRows: Encodable where Rows: Encodable {}
extension FetchedRows: Decodable where Rows: Decodable {}

/// `fetch.count`'s answer.
public struct CountResult: Codable, Sendable, Hashable {
    public var count: Int

    public init(count: Int) { self.count = count }
}

extension CountResult: JSONTextWritable {
    /// The text `JSONTextEncoder` writes for it, written without the encoder (whose first use
    /// in a service process was most of a first `fetch.count`'s reply).
    public func writeJSON(to out: inout String) -> Bool {
        out += #"{"count":"#
        out += String(count)
        out += "}"
        return true
    }
}
