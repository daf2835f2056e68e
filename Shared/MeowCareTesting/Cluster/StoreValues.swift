/// A sort key of a fetch.
public struct FetchSort: Sendable, Hashable {
    public var key: String
    public var ascending: Bool
    public static func ascending(_ key: String) -> FetchSort { FetchSort(key: key, ascending: true) }
    public static func descending(_ key: String) -> FetchSort { FetchSort(key: key, ascending: false) }
    var json: JSONValue { ["key": .string(key), "ascending": .bool(ascending)] }
}

/// The share metadata the shared store keeps per cloud zone (`share.list`).
public struct ShareMetadata: Decodable, Sendable, Hashable {
    public var zoneName: String
    public var ownerName: String
    /// `none`, `readOnly` or `readWrite`.
    public var permission: String
}

/// The cloud's clock (`admin.setClock`): it stands still once set.
public struct ClockState: Decodable, Sendable, Hashable {
    /// Seconds since 1970.
    public var now: Double
    /// Whether the clock is set (true) or follows the system's (false).
    public var fixed: Bool
}
