import FoundationEssentials
import MeowWire
import StoreWire

/// A connection the checks run on: a device's store-service, or the cloud as one user. The
/// checks are shared by `meowctl doctor`/`diff` and MeowCareTesting, which report failures
/// their own way, so a failed call is handed back as an `InspectionError` naming its op.
public protocol InspectionConnection: Sendable {
    /// The user the connection acts as (the cloud's `hello` answer); nil for a device.
    var user: String? { get }
    func request(_ op: String, _ params: [String: JSONValue]) async throws(WireError) -> JSONValue
}

/// A check's call that failed: the op and the service's error.
public struct InspectionError: Error, Sendable, CustomStringConvertible {
    public var op: String
    public var error: WireError
    public init(op: String, error: WireError) {
        self.op = op
        self.error = error
    }
    public var description: String { "\(op) failed: \(error.code): \(error.message)" }
}

/// A `WireClient` that said hello (as `user`, for the cloud).
///
/// ```swift
/// let doctor = Doctor(device: WireInspectionConnection(client: client))
/// ```
public struct WireInspectionConnection: InspectionConnection {
    public let client: WireClient
    public let user: String?
    public init(client: WireClient, user: String? = nil) {
        self.client = client
        self.user = user
    }
    public func request(_ op: String, _ params: [String: JSONValue]) async throws(WireError) -> JSONValue {
        try await client.call(op, params, timeout: .seconds(60))
    }
}

extension InspectionConnection {
    func call(_ op: String, _ params: [String: JSONValue] = [:]) async throws(InspectionError) -> JSONValue {
        do { return try await request(op, params) } catch { throw InspectionError(op: op, error: error) }
    }

    /// A call whose result reads as a store result `R` (a reply that does not read is the op's error, naming the field).
    func call<R: Decodable>(_ op: String, _ params: [String: JSONValue] = [:], as type: R.Type) async throws(InspectionError) -> R {
        let reply = try await call(op, params)
        do throws(WireError) { return try StoreReply.read(R.self, from: reply, op: op) } catch { throw InspectionError(op: op, error: error) }
    }

    /// `attempt` for a store result `R`: a reply that does not read is handed back as the op's error, naming the field.
    func attempt<R: Decodable>(_ op: String, _ params: [String: JSONValue] = [:], as type: R.Type) async throws(InspectionError) -> Result<R, WireError> {
        switch try await attempt(op, params) {
        case let .success(reply):
            do throws(WireError) { return .success(try StoreReply.read(R.self, from: reply, op: op)) } catch { return .failure(error) }
        case let .failure(error):
            return .failure(error)
        }
    }

    /// An error reply handed back; a lost or unreachable service still ends the checks.
    func attempt(_ op: String, _ params: [String: JSONValue] = [:]) async throws(InspectionError) -> Result<JSONValue, WireError> {
        do {
            return .success(try await request(op, params))
        } catch {
            if [.connectionClosed, .timedOut, .networkUnavailable].contains(error.code) { throw InspectionError(op: op, error: error) }
            return .failure(error)
        }
    }

    /// Every row of `entity` (`resultFormat: rows`, paged), as dictionaries keyed by column.
    func rows(entity: String) async throws(InspectionError) -> [[String: JSONValue]] {
        let page = 2000
        var result: [[String: JSONValue]] = []
        while true {
            let reply = try await call("fetch", ["entity": .string(entity), "resultFormat": "rows", "offset": .int(result.count), "limit": .int(page)],
                                       as: FetchedRows<[[JSONValue]]>.self)
            for row in reply.rows { result.append(Dictionary(uniqueKeysWithValues: zip(reply.columns, row))) }
            if reply.rows.count < page { return result }
        }
    }
}

extension JSONValue {
    /// A value as a finding's text or a table's cell shows it: strings as they are, whole
    /// numbers without ".0", null as "–", arrays and objects as compact JSON with sorted keys.
    public var cell: String {
        switch self {
        case .null: return "–"
        case let .string(text): return text
        case let .bool(value): return value ? "yes" : "no"
        case let .int(value): return String(value)
        case let .double(value): return value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
        case .array, .object:
            return JSONWriter.text(self)
        }
    }
}

extension Optional where Wrapped == JSONValue {
    public var cell: String { self?.cell ?? "–" }
}
