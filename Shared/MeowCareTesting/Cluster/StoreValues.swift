/// A sort key of a fetch.
public struct FetchSort: Sendable, Hashable {
    public var key: String
    public var ascending: Bool
    public static func ascending(_ key: String) -> FetchSort { FetchSort(key: key, ascending: true) }
    public static func descending(_ key: String) -> FetchSort { FetchSort(key: key, ascending: false) }
    var json: JSONValue { ["key": .string(key), "ascending": .bool(ascending)] }
}

/// The cloud's clock (`admin.setClock`): it stands still once set.
public struct ClockState: Decodable, Sendable, Hashable {
    /// Seconds since 1970.
    public var now: Double
    /// Whether the clock is set (true) or follows the system's (false).
    public var fixed: Bool
}
