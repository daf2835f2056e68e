import MeowWire

extension JSONValue {
    /// The value as compared across the places it is seen: the cloud stores booleans and
    /// integers as int64, doubles as double and dates as seconds since 1970, and writes UUIDs in
    /// upper case, so a number is compared by its value, a boolean as 0 or 1, a date's text as
    /// its seconds, and a UUID-shaped string without regard to case.
    public var canonical: JSONValue {
        switch self {
        case let .int(value): .double(Double(value))
        case let .bool(value): .double(value ? 1 : 0)
        case let .string(value) where value.count == 36 && value.filter({ $0 == "-" }).count == 4: .string(value.uppercased())
        case let .string(value) where ISODate.seconds(value) != nil: .double(ISODate.seconds(value) ?? 0)
        case let .array(values): .array(values.map(\.canonical))
        case let .object(object): .object(object.mapValues(\.canonical))
        default: self
        }
    }

    /// Whether two values are the same once compared as the places that hold them store them.
    public func same(as other: JSONValue) -> Bool { canonical == other.canonical }
}
