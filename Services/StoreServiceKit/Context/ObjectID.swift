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
        var store = store, entity = entity
        return store.withUTF8 { store in
            entity.withUTF8 { entity in
                let prefix = "x-coredata://".utf8
                return String(unsafeUninitializedCapacity: prefix.count + store.count + entity.count + 23) { out in
                    var at = 0
                    func put(_ bytes: some Sequence<UInt8>) {
                        for byte in bytes { out[at] = byte; at += 1 }
                    }
                    put(prefix)
                    _ = UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(from: store)
                    at += store.count
                    out[at] = UInt8(ascii: "/")
                    at += 1
                    _ = UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(from: entity)
                    at += entity.count
                    out[at] = UInt8(ascii: "/")
                    out[at + 1] = UInt8(ascii: "p")
                    at += 2
                    if primaryKey < 0 { out[at] = UInt8(ascii: "-"); at += 1 }
                    var magnitude = primaryKey.magnitude
                    var digits = 1
                    var probe = magnitude / 10
                    while probe > 0 { digits += 1; probe /= 10 }
                    for offset in stride(from: digits - 1, through: 0, by: -1) {
                        out[at + offset] = 0x30 + UInt8(magnitude % 10)
                        magnitude /= 10
                    }
                    return at + digits
                }
            }
        }
    }

    /// A temporary ID's URI, written straight into the string's storage (every inserted object
    /// gets one).
    static func temporaryURI(entity: String, token: String) -> String {
        var entity = entity, token = token
        return entity.withUTF8 { entity in
            token.withUTF8 { token in
                let prefix = "x-coredata:///".utf8
                return String(unsafeUninitializedCapacity: prefix.count + entity.count + token.count + 2) { out in
                    var at = 0
                    for byte in prefix { out[at] = byte; at += 1 }
                    _ = UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(from: entity)
                    at += entity.count
                    out[at] = UInt8(ascii: "/")
                    out[at + 1] = UInt8(ascii: "t")
                    at += 2
                    _ = UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(from: token)
                    return at + token.count
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
