import Foundation
import Synchronization

/// The cluster's state every client checks: whether it has stopped, and the connections to
/// close when it does.
final class ClusterLifecycle: Sendable {
    private let state = Mutex<(stopped: Bool, clients: [WireClient])>((false, []))
    let trace = FrameTrace()
    let cloudWrites = CloudWriteCursor()

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Registers a connection to close at stop; false (and the client closed) when the cluster stopped already.
    func adopt(_ client: WireClient) -> Bool {
        let adopted = state.withLock { state -> Bool in
            if state.stopped { return false }
            state.clients.append(client)
            return true
        }
        if !adopted { client.close() }
        return adopted
    }

    /// Marks the cluster stopped and closes every connection; later calls fail with `clusterStopped`.
    func stop() {
        let clients = state.withLock { state -> [WireClient] in
            state.stopped = true
            defer { state.clients = [] }
            return state.clients
        }
        clients.forEach { $0.close() }
    }

    func stoppedError(op: String?, service: String) -> MeowCareError {
        MeowCareError(.clusterStopped, "\(service) was used after its cluster stopped: a client lives only as long as the cluster "
                      + "(the test's scope, or the withMeowCluster closure) that made it.", op: op, service: service)
    }
}

/// One connection of the fixture to a service, with `hello` done: every request and reply is
/// recorded in the cluster's trace, errors become `MeowCareError`s naming the service, and a
/// call after the cluster stopped fails with `clusterStopped`.
final class TracedConnection: Sendable {
    let label: String
    let service: String
    let client: WireClient
    let lifecycle: ClusterLifecycle

    private init(label: String, service: String, client: WireClient, lifecycle: ClusterLifecycle) {
        self.label = label
        self.service = service
        self.client = client
        self.lifecycle = lifecycle
    }

    static func open(socket: String, service: String, label: String, credential: String? = nil,
                     lifecycle: ClusterLifecycle) async throws(MeowCareError) -> TracedConnection {
        if lifecycle.isStopped { throw lifecycle.stoppedError(op: "hello", service: service) }
        let client: WireClient
        do throws(WireError) { client = try WireClient(socketPath: socket, timeout: .seconds(120)) } catch { throw MeowCareError(error, op: "connect", service: service) }
        guard lifecycle.adopt(client) else { throw lifecycle.stoppedError(op: "hello", service: service) }
        let connection = TracedConnection(label: label, service: service, client: client, lifecycle: lifecycle)
        lifecycle.trace.keepSecret(credential)
        lifecycle.trace.record(label, "→", #"{"op":"hello","params":{"client":"MeowCareTesting"\#(credential == nil ? "" : #","credential":"…""#)}}"#)
        do throws(WireError) {
            let hello = try await client.hello(client: "MeowCareTesting \(label)", credential: credential)
            lifecycle.trace.record(label, "←", #"{"service":"\#(hello.service)","user":\#(hello.user.map { "\"\($0)\"" } ?? "null")}"#)
        } catch {
            throw connection.failure(error, op: "hello")
        }
        return connection
    }

    /// The user the connection acts as (the cloud's hello answer).
    func call(_ op: String, _ params: [String: JSONValue] = [:], timeout: Duration? = nil) async throws(MeowCareError) -> JSONValue {
        if lifecycle.isStopped { throw lifecycle.stoppedError(op: op, service: service) }
        let request: JSONValue = ["op": .string(op), "params": .object(params)]
        lifecycle.trace.keepSecret(params["credential"]?.stringValue)
        lifecycle.trace.record(label, "→", value: request, redacting: true)
        do throws(WireError) {
            let result = try await client.call(op, params, timeout: timeout)
            lifecycle.trace.record(label, "←", value: ["op": .string(op), "ok": true, "result": result], redacting: true)
            return result
        } catch {
            lifecycle.trace.record(label, "←", value: ["op": .string(op), "ok": false,
                                                       "error": ["code": .string(error.code.rawValue), "message": .string(error.message),
                                                                 "details": .object(error.details)]], redacting: false)
            throw failure(error, op: op)
        }
    }

    /// A call whose result decodes as `R` (StoreWire's reader: a reply that does not read names
    /// the field that broke it in `details.field`).
    func call<R: Decodable>(_ op: String, _ params: [String: JSONValue] = [:], as type: R.Type, timeout: Duration? = nil) async throws(MeowCareError) -> R {
        let value = try await call(op, params, timeout: timeout)
        do throws(WireError) { return try StoreReply.read(R.self, from: value, op: op) } catch {
            throw MeowCareError(error.code, "\(error.message) Reply: \(JSONWriter.text(CredentialRedaction.redacted(value)).prefix(500))",
                                details: error.details, op: op, service: service)
        }
    }

    /// Opens a subscription's event stream on this connection: each event is traced.
    func subscribe(_ topics: [String]) async throws(MeowCareError) -> AsyncStream<WireEvent> {
        _ = try await call("subscribe", ["topics": .array(topics.map { .string($0) })])
        let (stream, continuation) = AsyncStream.makeStream(of: WireEvent.self)
        let source = client.events
        let label = self.label, trace = lifecycle.trace
        Task {
            for await event in source {
                trace.record(label, "⚡", value: ["event": .string(event.name), "seq": .int(Int(event.seq)), "data": event.data], redacting: false)
                continuation.yield(event)
            }
            continuation.finish()
        }
        return stream
    }

    func close() { client.close() }

    private func failure(_ error: WireError, op: String) -> MeowCareError {
        // A connection the stop closed under a call reads as the stop, not as a lost service.
        if lifecycle.isStopped, [.connectionClosed, .networkUnavailable].contains(error.code) {
            return lifecycle.stoppedError(op: op, service: service)
        }
        return MeowCareError(error, op: op, service: service)
    }
}
