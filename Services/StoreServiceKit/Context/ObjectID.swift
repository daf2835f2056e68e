import FoundationEssentials

/// A managed object's identity in Core Data's URI form.
///
/// - temporary (inserted, not yet saved): `x-coredata:///CareEvent/t3F2…`
/// - permanent (bound to one store): `x-coredata://<storeUUID>/CareEvent/p42`
public enum ObjectID: Hashable, Sendable, CustomStringConvertible {
    case temporary(entity: String, token: String)
    case permanent(storeUUID: String, entity: String, primaryKey: Int64)

    public static func newTemporary(entity: String) -> ObjectID {
        .temporary(entity: entity, token: UUID().uuidString)
    }

    public var entity: String {
        switch self {
        case let .temporary(entity, _), let .permanent(_, entity, _): return entity
        }
    }

    public var isTemporary: Bool { if case .temporary = self { return true }; return false }

    public var storeUUID: String? { if case let .permanent(store, _, _) = self { return store }; return nil }
    public var primaryKey: Int64? { if case let .permanent(_, _, key) = self { return key }; return nil }

    public var uri: String {
        switch self {
        case let .temporary(entity, token): return Self.temporaryURI(entity: entity, token: token)
        case let .permanent(store, entity, key): return Self.permanentURI(store: store, entity: entity, primaryKey: key)
        }
    }

    /// A permanent ID's URI, written straight into the string's own storage: interpolating it
    /// was a tenth of writing a page of fetched rows, and a save names each new object by it.
    public static func permanentURI(store: String, entity: String, primaryKey: Int64) -> String {
        let prefix: StaticString = "x-coredata://"
        return writing(store, entity, fixed: prefix.utf8CodeUnitCount + 23) { uri, store, entity in
            uri.put(prefix)
            uri.put(store)
            uri.put("/")
            uri.put(entity)
            uri.put("/p")
            uri.put(primaryKey)
        }
    }

    /// A temporary ID's URI, written straight into the string's storage (every inserted object
    /// gets one).
    static func temporaryURI(entity: String, token: String) -> String {
        let prefix: StaticString = "x-coredata:///"
        return writing(entity, token, fixed: prefix.utf8CodeUnitCount + 2) { uri, entity, token in
            uri.put(prefix)
            uri.put(entity)
            uri.put("/t")
            uri.put(token)
        }
    }

    /// A URI of two strings' bytes and at most `fixed` more, written by `write` into a new
    /// string's storage.
    @inline(__always)
    private static func writing(_ first: String, _ second: String, fixed: Int,
                                _ write: (inout URIBytes, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> String {
        var first = first, second = second
        return first.withUTF8 { first in
            second.withUTF8 { second in
                String(unsafeUninitializedCapacity: first.count + second.count + fixed) { out in
                    var uri = URIBytes(out)
                    write(&uri, first, second)
                    return uri.count
                }
            }
        }
    }

    public var description: String { uri }

    /// Parses the URI form; nil when it is not an object ID.
    public init?(uri: String) {
        guard uri.hasPrefix("x-coredata://") else { return nil }
        let parts = uri.dropFirst("x-coredata://".count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty, parts[2].count > 1 else { return nil }
        let entity = String(parts[1])
        let last = parts[2]
        let tail = String(last.dropFirst())
        if parts[0].isEmpty {
            guard last.first == "t", !tail.isEmpty else { return nil }
            self = .temporary(entity: entity, token: tail)
        } else {
            guard last.first == "p", let key = Int64(tail), key > 0 else { return nil }
            self = .permanent(storeUUID: String(parts[0]), entity: entity, primaryKey: key)
        }
    }
}

/// An ID's URI written piece by piece into a string's uninitialized storage, sized by the caller.
private struct URIBytes {
    private let out: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0

    init(_ out: UnsafeMutableBufferPointer<UInt8>) { self.out = out }

    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = UnsafeMutableBufferPointer(rebasing: out[count...]).initialize(from: bytes)
        count += bytes.count
    }

    mutating func put(_ text: StaticString) {
        text.withUTF8Buffer { put($0) }
    }

    /// A decimal integer (at most 20 bytes).
    mutating func put(_ value: Int64) {
        if value < 0 { out[count] = UInt8(ascii: "-"); count += 1 }
        var magnitude = value.magnitude
        var digits = 1
        var probe = magnitude / 10
        while probe > 0 { digits += 1; probe /= 10 }
        for offset in stride(from: digits - 1, through: 0, by: -1) {
            out[count + offset] = 0x30 + UInt8(magnitude % 10)
            magnitude /= 10
        }
        count += digits
    }
}
