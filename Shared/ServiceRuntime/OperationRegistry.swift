import FoundationEssentials
import MeowWire

/// Who may call an operation.
public enum OperationAccess: Sendable {
    /// Any connection that has said hello.
    case afterHello
    /// A connection whose hello carried a valid credential (the sync-service's users).
    case authenticated
    /// A connection authenticated with the admin credential.
    case admin
}

/// A handler's result as the connection writes it: through its own text writer when its type
/// has one (the registry's overloads know that at compile time), else through `Encodable`.
enum OperationReply: Sendable {
    case encodable(any Encodable & Sendable)
    case text(any JSONTextWritable & Encodable & Sendable)
}

/// What a handler sees of the request it serves.
public struct RequestContext: Sendable {
    public let requestID: RequestID
    public let op: String
    public let connection: ConnectionHandle
    public let logger: Logger
}

/// The table of operations a service answers. Params are decoded in the same pass as the
/// envelope (the entry's decoder runs inside the envelope's `init(from:)`), which keeps a
/// request to one JSON parse.
///
/// ```swift
/// registry.register("ping", params: Empty.self) { _, context in PingResult(...) }
/// ```
public struct OperationRegistry: Sendable {
    struct Entry: Sendable {
        let name: String
        let access: OperationAccess
        let summary: String
        let decodeParams: @Sendable (KeyedDecodingContainer<IncomingRequest.Keys>, Bool) throws -> any Sendable
        /// Decodes params from their tree (nil: absent or null), for a request whose envelope
        /// was read without a tree (`Connection.readDirectly`). Errors as `decodeParams` words them.
        let decodeTree: @Sendable (JSONValue?) throws -> any Sendable
        /// Reads params from their bytes, for params types that read themselves (`JSONReadable`):
        /// their one reader, whatever the envelope's form.
        let readParams: ParamsReader?
        let run: @Sendable (any Sendable, RequestContext) throws -> OperationReply
    }

    private(set) var entries: [String: Entry] = [:]

    public init() {}

    /// Registers `name`. The handler runs on the connection's thread; it may block.
    ///
    /// Params that read themselves from their bytes (`JSONReadable`) and results that write
    /// their own text (`JSONTextWritable`) are registered through the overloads below, chosen at
    /// compile time: finding either out at run time is a dynamic cast, which scans every
    /// protocol conformance record of the process the first time for each type.
    public mutating func register<Params: Decodable & Sendable, Result: Encodable & Sendable>(
        _ name: String, params: Params.Type, access: OperationAccess = .afterHello, summary: String = "",
        handler: @escaping @Sendable (Params, RequestContext) throws -> Result
    ) {
        Self.assertPlain(name, params: Params.self, result: Result.self)
        add(name, params: params, access: access, summary: summary, readParams: nil) { .encodable(try handler($0, $1)) }
    }

    /// Registers `name` whose params read themselves from the request's bytes (`JSONReadable`).
    public mutating func register<Params: Decodable & Sendable & JSONReadable, Result: Encodable & Sendable>(
        _ name: String, params: Params.Type, access: OperationAccess = .afterHello, summary: String = "",
        handler: @escaping @Sendable (Params, RequestContext) throws -> Result
    ) {
        Self.assertPlain(name, result: Result.self)
        add(name, params: params, access: access, summary: summary, readParams: Self.reader(Params.self)) { .encodable(try handler($0, $1)) }
    }

    /// Registers `name` whose result writes its own text (`JSONTextWritable`).
    public mutating func register<Params: Decodable & Sendable, Result: Encodable & Sendable & JSONTextWritable>(
        _ name: String, params: Params.Type, access: OperationAccess = .afterHello, summary: String = "",
        handler: @escaping @Sendable (Params, RequestContext) throws -> Result
    ) {
        Self.assertPlain(name, params: Params.self)
        add(name, params: params, access: access, summary: summary, readParams: nil) { .text(try handler($0, $1)) }
    }

    /// Registers `name` whose params read themselves and whose result writes its own text.
    public mutating func register<Params: Decodable & Sendable & JSONReadable, Result: Encodable & Sendable & JSONTextWritable>(
        _ name: String, params: Params.Type, access: OperationAccess = .afterHello, summary: String = "",
        handler: @escaping @Sendable (Params, RequestContext) throws -> Result
    ) {
        add(name, params: params, access: access, summary: summary, readParams: Self.reader(Params.self)) { .text(try handler($0, $1)) }
    }

    /// Debug builds (the tests) catch a generic wrapper that lost a params type's reader or a
    /// result type's writer by registering it through a less specific overload.
    private static func assertPlain(_ name: String, params: Any.Type = Never.self, result: Any.Type = Never.self) {
        assert(!(params is any JSONReadable.Type), "\(name): \(params) reads itself; register it through a JSONReadable overload")
        assert(!(result is any JSONTextWritable.Type), "\(name): \(result) writes its own text; register it through a JSONTextWritable overload")
    }

    private mutating func add<Params: Decodable & Sendable>(
        _ name: String, params: Params.Type, access: OperationAccess, summary: String, readParams: ParamsReader?,
        handler: @escaping @Sendable (Params, RequestContext) throws -> OperationReply
    ) {
        precondition(entries[name] == nil, "operation \(name) registered twice")
        entries[name] = Entry(
            name: name, access: access, summary: summary,
            decodeParams: { container, present in
                if present { return try container.decode(Params.self, forKey: .params) }
                do {
                    return try JSONValueDecoder().decode(Params.self, from: .object([:]))
                } catch is DecodingError {
                    // Decoded again under a `params` key, so a missing field is named `params.name`
                    // as it is when the client sent params. Only a refusal takes this way: the
                    // wrapper's generic metadata is looked up at run time on every decode, which
                    // would make each request without params (every ping) markedly dearer.
                    return try JSONValueDecoder().decode(ParamsLeftOut<Params>.self, from: ["params": [:]]).params
                }
            },
            decodeTree: { params in
                let tree = params ?? .object([:])
                do {
                    return try JSONValueDecoder().decode(Params.self, from: tree)
                } catch is DecodingError {
                    // Decoded again under a `params` key only to name the field as `params.name`,
                    // as a request parsed whole does (see above for why not always).
                    return try JSONValueDecoder().decode(ParamsLeftOut<Params>.self, from: ["params": tree]).params
                }
            },
            readParams: readParams,
            run: { params, context in try handler(params as! Params, context) })
    }

    typealias ParamsReader = @Sendable (UnsafeBufferPointer<UInt8>) throws(MessageReadError) -> any Sendable

    /// The bytes reader of a params type that reads itself.
    private static func reader<Readable: JSONReadable & Sendable>(_ type: Readable.Type) -> @Sendable (UnsafeBufferPointer<UInt8>) throws(MessageReadError) -> any Sendable {
        { (bytes) throws(MessageReadError) in try Readable.read(bytes) }
    }

    func entry(_ name: String) -> Entry? { entries[name] }

    /// `entry`'s params from their tree, its failure as the reply's error.
    static func params(of entry: Entry, op: String, from tree: JSONValue?) -> Result<any Sendable, WireError> {
        do {
            return .success(try entry.decodeTree(tree))
        } catch {
            return .failure(IncomingRequest.paramsError(error, op: op))
        }
    }

    private struct ParamsLeftOut<Params: Decodable>: Decodable { var params: Params }

    public var names: [String] { entries.keys.sorted() }
}

/// A request as the service reads it. Field problems are kept, not thrown, so the reply can
/// still carry the request's id.
struct IncomingRequest: Decodable {
    enum Keys: String, CodingKey { case id, op, params }
    static let registryKey = CodingUserInfoKey(rawValue: "meow.registry")!

    var id: RequestID?
    var op: String?
    var params: Result<any Sendable, WireError>?
    var fieldError: WireError?
    /// The op's params read themselves (`JSONReadable`): the connection reads them from the
    /// request's bytes (`Connection.readParams`), not from this tree.
    var paramsUnread = false

    /// A request whose params were read from its bytes (`Connection.readDirectly`).
    init(id: RequestID, op: String, params: Result<any Sendable, WireError>) {
        self.id = id
        self.op = op
        self.params = params
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        do {
            id = try container.decodeIfPresent(RequestID.self, forKey: .id)
            if id == nil { fieldError = WireError(.missingField, "The request has no id; add \"id\": <integer or string>.", details: ["field": "id"]) }
        } catch {
            fieldError = WireError(.invalidField, "id must be an integer or a string.", details: ["field": "id"])
        }
        do {
            op = try container.decodeIfPresent(String.self, forKey: .op)
            if op == nil, fieldError == nil {
                fieldError = WireError(.missingField, "The request has no op; add \"op\": \"<name>\".", details: ["field": "op"])
            }
        } catch {
            if fieldError == nil { fieldError = WireError(.invalidField, "op must be a string.", details: ["field": "op"]) }
        }
        guard fieldError == nil, let op, let registry = decoder.userInfo[Self.registryKey] as? OperationRegistry,
              let entry = registry.entry(op) else { return }
        if entry.readParams != nil {
            paramsUnread = true
            return
        }
        let present = container.contains(.params) && !((try? container.decodeNil(forKey: .params)) ?? false)
        do {
            params = .success(try entry.decodeParams(container, present))
        } catch {
            params = .failure(Self.paramsError(error, op: op))
        }
    }

    /// The reply's error for params that did not decode.
    static func paramsError(_ error: any Error, op: String) -> WireError {
        switch error {
        case let error as WireError: return error
        case let error as DecodingError: return error.wireError(op: op)
        default: return WireError(.invalidField, "params for '\(op)': \(error)")
        }
    }
}

extension MessageReadError {
    /// The wire error of params that do not read (`JSONReadable`), as `DecodingError.wireError`
    /// words the same problem for params decoded from a tree.
    func wireError(op: String) -> WireError {
        let field = MessagePath.text([.key("params")] + path)
        switch problem {
        case .missing:
            return WireError(.missingField, "'\(op)' needs \(field).", details: ["field": .string(field), "op": .string(op)])
        case let .null(kind):
            return WireError(.missingField, "'\(op)': \(field) is null; it must be \(kind.rawValue).",
                             details: ["field": .string(field), "op": .string(op)])
        case let .expected(kind):
            return WireError(.invalidField, "'\(op)': \(field) must be \(kind.rawValue).",
                             details: ["field": .string(field), "op": .string(op), "expected": .string(kind.rawValue)])
        case let .invalid(message):
            return WireError(.invalidField, "'\(op)': \(field): \(message)", details: ["field": .string(field), "op": .string(op)])
        case .malformed:
            return WireError(.invalidField, "'\(op)': \(field) is not valid JSON.", details: ["field": .string(field), "op": .string(op)])
        }
    }
}

extension DecodingError {
    /// Maps a decoding failure to missingField / invalidField with the JSON path of the field.
    func wireError(op: String) -> WireError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            var keys = codingPath
            if let last { keys.append(last) }
            var text = ""
            for key in keys {
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
            return text.isEmpty ? "params" : text
        }
        switch self {
        case let .keyNotFound(key, context):
            let field = path(context.codingPath, key)
            return WireError(.missingField, "'\(op)' needs \(field).", details: ["field": .string(field), "op": .string(op)])
        case let .valueNotFound(type, context):
            let field = path(context.codingPath)
            return WireError(.missingField, "'\(op)': \(field) is null; it must be \(Self.typeName(type)).",
                             details: ["field": .string(field), "op": .string(op)])
        case let .typeMismatch(type, context):
            let field = path(context.codingPath)
            return WireError(.invalidField, "'\(op)': \(field) must be \(Self.typeName(type)).",
                             details: ["field": .string(field), "op": .string(op), "expected": .string(Self.typeName(type))])
        case let .dataCorrupted(context):
            let field = path(context.codingPath)
            return WireError(.invalidField, "'\(op)': \(field): \(context.debugDescription)",
                             details: ["field": .string(field), "op": .string(op)])
        @unknown default:
            return WireError(.invalidField, "'\(op)': \(self)")
        }
    }

    /// The failure as the author of a file reads it: the field's path and what it must be
    /// (`faults[0].op must be a string`).
    public var fileProblem: String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let text = (codingPath + (last.map { [$0] } ?? [])).map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return text.isEmpty ? "the top level" : String(text.drop { $0 == "." })
        }
        switch self {
        case let .keyNotFound(key, context): return "\(path(context.codingPath, key)) is missing"
        case let .valueNotFound(type, context): return "\(path(context.codingPath)) is null; it must be \(Self.typeName(type))"
        case let .typeMismatch(type, context): return "\(path(context.codingPath)) must be \(Self.typeName(type))"
        case let .dataCorrupted(context): return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(self)"
        }
    }

    static func typeName(_ type: Any.Type) -> String {
        let name = String(describing: type)
        switch name {
        case "String": return "a string"
        case "Int", "Int64", "UInt64", "Int32", "UInt32", "UInt": return "an integer"
        case "Double", "Float": return "a number"
        case "Bool": return "a boolean"
        default:
            if name.hasPrefix("Array") || name.hasPrefix("[") { return "an array" }
            if name.hasPrefix("Dictionary") { return "an object" }
            return "a \(name) value"
        }
    }
}
