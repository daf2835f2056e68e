import FoundationEssentials

/// A request as a client sends it: `{"id": …, "op": "…", "params": {…}}`.
public struct RequestEnvelope<Params: Encodable>: Encodable {
    public var id: RequestID
    public var op: String
    public var params: Params
    public init(id: RequestID, op: String, params: Params) {
        self.id = id
        self.op = op
        self.params = params
    }
}

/// A successful reply: `{"id": …, "ok": true, "result": {…}}`.
public struct SuccessReply<Result: Encodable>: Encodable {
    public var id: RequestID
    public var result: Result
    public init(id: RequestID, result: Result) {
        self.id = id
        self.result = result
    }
    enum CodingKeys: String, CodingKey { case id, ok, result }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(true, forKey: .ok)
        try container.encode(result, forKey: .result)
    }
}

/// An error reply: `{"id": … or null, "ok": false, "error": {"code", "message", "details"}}`.
/// The id is null when the request's id could not be read.
public struct ErrorReply: Encodable, Sendable {
    public var id: RequestID?
    public var error: WireError
    public init(id: RequestID?, error: WireError) {
        self.id = id
        self.error = error
    }
    enum CodingKeys: String, CodingKey { case id, ok, error }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let id { try container.encode(id, forKey: .id) } else { try container.encodeNil(forKey: .id) }
        try container.encode(false, forKey: .ok)
        try container.encode(error, forKey: .error)
    }
}

/// A server push: `{"event": "…", "seq": n, "data": {…}}`. seq counts events per connection from 1.
public struct EventEnvelope<Payload: Encodable>: Encodable {
    public var event: String
    public var seq: UInt64
    public var data: Payload
    public init(event: String, seq: UInt64, data: Payload) {
        self.event = event
        self.seq = seq
        self.data = data
    }
}

/// Anything a client can receive: a reply (id, ok, result or error) or an event (event, seq, data).
public struct IncomingMessage: Decodable, Sendable {
    public var id: RequestID?
    public var ok: Bool?
    public var result: JSONValue?
    public var error: WireError?
    public var event: String?
    public var seq: UInt64?
    public var data: JSONValue?

    public var isEvent: Bool { event != nil && ok == nil }
}

/// A pushed event as the client library hands it out.
public struct WireEvent: Sendable, Hashable {
    public var name: String
    public var seq: UInt64
    public var data: JSONValue
    public init(name: String, seq: UInt64, data: JSONValue) {
        self.name = name
        self.seq = seq
        self.data = data
    }
}

/// An empty params or result object, `{}`.
public struct Empty: Codable, Sendable, Hashable {
    public init() {}
}

/// The envelope as this package writes it: compact, `id` first and an integer
/// (`{"id":7,"op":…` from `WireClient`, `{"id":7,"ok":true,"result":…}` from the services).
/// Readers of hot messages find an envelope's parts this way without a JSON tree; a body in any
/// other form is parsed as usual (docs/PROTOCOL.md §2).
public enum CompactEnvelope {
    private static let opening = Array(#"{"id":"#.utf8)

    /// The id of a body that opens `{"id":` with an integer (1–18 digits, no leading zero) and
    /// ends with `}`, and the index just past the id's digits; nil for any other body.
    public static func leadingID(_ bytes: UnsafeBufferPointer<UInt8>) -> (id: Int, end: Int)? {
        guard bytes.count > opening.count + 1, bytes.starts(with: opening), bytes[bytes.count - 1] == UInt8(ascii: "}") else { return nil }
        var index = opening.count
        var number = 0
        while index < bytes.count, index - opening.count < 18, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            number = number * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        guard index > opening.count, bytes[opening.count] != UInt8(ascii: "0") || index == opening.count + 1 else { return nil }
        return (number, index)
    }

    /// Whether `bytes` hold `expected` from `index` on.
    public static func has(_ expected: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        index <= bytes.count && UnsafeBufferPointer(rebasing: bytes[index...]).starts(with: expected)
    }
}
