import Glibc

/// A value SQLite stores: its five storage classes.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var int: Int? { if case let .integer(v) = self { return Int(v) }; return nil }
    public var int64: Int64? { if case let .integer(v) = self { return v }; return nil }
    public var double: Double? {
        switch self {
        case let .real(v): return v
        case let .integer(v): return Double(v)
        default: return nil
        }
    }
    public var string: String? { if case let .text(v) = self { return v }; return nil }
    public var bytes: [UInt8]? {
        switch self {
        case let .blob(v): return v
        case let .text(v): return Array(v.utf8)
        default: return nil
        }
    }
    public var isNull: Bool { self == .null }
}

/// Swift values that bind as SQL values.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}
extension Int: SQLBindable { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Int64: SQLBindable { public var sqlValue: SQLValue { .integer(self) } }
extension Double: SQLBindable { public var sqlValue: SQLValue { .real(self) } }
extension String: SQLBindable { public var sqlValue: SQLValue { .text(self) } }
extension Bool: SQLBindable { public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension SQLValue: SQLBindable { public var sqlValue: SQLValue { self } }
extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
extension Array: SQLBindable where Element == UInt8 { public var sqlValue: SQLValue { .blob(self) } }

/// One result row: values by column index or name.
public struct Row: Sendable {
    public let columns: [String]
    public let values: [SQLValue]

    public subscript(index: Int) -> SQLValue { values[index] }
    public subscript(name: String) -> SQLValue {
        guard let index = columns.firstIndex(of: name) else { return .null }
        return values[index]
    }
}

extension SQLValue {
    /// The least of `texts` as SQLite orders text under its default (BINARY) collation: by
    /// their UTF-8 bytes, which Swift's own `<` on strings need not match. For "is anything
    /// stored at or after these?" probes of a text index.
    public static func leastText(_ texts: [String]) -> String? {
        guard var least = texts.first else { return nil }
        for text in texts.dropFirst() where bytewiseLess(text, least) { least = text }
        return least
    }

    /// `a < b` by UTF-8 bytes, compared with `memcmp` over the strings' own storage: a page of
    /// time-ordered record names shares long prefixes, which the generic element-by-element
    /// comparison of two UTF-8 views walked at hundreds of instructions a name.
    static func bytewiseLess(_ a: String, _ b: String) -> Bool {
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Bool in
                let shared = min(x.count, y.count)
                let order = shared == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, shared)
                return order != 0 ? order < 0 : x.count < y.count
            }
        }
        return (fast ?? nil) ?? a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}
