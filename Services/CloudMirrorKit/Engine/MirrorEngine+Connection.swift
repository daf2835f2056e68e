import CloudWire
import Foundation
import MeowWire
import StoreServiceKit
import Synchronization

extension MirrorEngine {
    // MARK: The sync-service connection

    /// The connected client (connecting and saying hello if needed).
    func client() throws(WireError) -> Connection {
        if let live = connection.withLock({ $0 }) { return live }
        let credential = try signedInCredential()
        // Connecting is each store's setup event (NSPersistentCloudKitContainer's `.setup`).
        let setups = storeIdentities.map { CloudKitEvent(.setup, store: $0, mirror: self) }
        for setup in setups { setup.begin() }
        do {
            let live = try connect(credential: credential)
            for setup in setups { setup.end(nil) }
            return live
        } catch {
            for setup in setups { setup.end(error) }
            throw error
        }
    }

    /// A new connection: hello with the credential, the push subscription, the local data switched to its user.
    private func connect(credential: String) throws(WireError) -> Connection {
        let client = try WireClient(socketPath: options.syncSocket, timeout: .seconds(60))
        let hello = try client.callBlocking("hello", HelloParams(client: "store-service mirror (\(options.deviceName))", credential: credential,
                                                                 environment: options.environment.rawValue))
        guard let user = hello["user"]?.stringValue else {
            client.close()
            throw WireError(.notAuthenticated, "The sync-service did not identify a user for the mirror's credential.")
        }
        if options.mode == .automatic { listenForChanges(client) }
        let live = Connection(client: client, user: user)
        do {
            try signIn(user)
        } catch {
            client.close()
            throw WireError(.internalError, "The mirror could not switch its local data to user \(user): \(error)")
        }
        connection.withLock { $0 = live }
        logger.info("connected to the sync-service", ["socket": .string(options.syncSocket), "user": .string(user), "device": .string(options.deviceName)])
        return live
    }

    /// One request to the sync-service. A broken connection is dropped so the next call reconnects.
    func call(_ op: String, _ params: JSONValue) throws(WireError) -> JSONValue {
        try request(op, params)
    }

    /// `call` with typed params, encoded once (no JSON tree in between).
    func request<P: Encodable>(_ op: String, _ params: P, retried alreadyRetried: Bool = false) throws(WireError) -> JSONValue {
        var retried = alreadyRetried
        while true {
            let live = try client()
            do {
                return try live.client.callBlocking(op, params)
            } catch {
                guard [.connectionClosed, .networkUnavailable, .timedOut].contains(error.code) else { throw error }
                connection.withLock { $0 = nil }
                live.client.close()
                // One fresh try, for a closed connection only: usually one the sync-service dropped
                // while it sat idle (a restart), which this request never reached. A service that
                // died while handling it reads the same; the repeat then meets what the first try
                // committed (not every op here is idempotent), and its answer is handled like any other.
                guard !retried, error.code == .connectionClosed else { throw error }
                retried = true
            }
        }
    }

    /// Sends a request without waiting (the reply is decoded on the client's reader thread
    /// while this thread works on): `wait()` gives the reply.
    /// `read`: reads a success reply from its bytes instead, on the reader thread (`ReplyWaiter`).
    func begin<P: Encodable>(_ op: String, _ params: P, decode: (@Sendable (JSONValue) -> any Sendable)? = nil,
                             read: (@Sendable (UnsafeBufferPointer<UInt8>) -> (any Sendable)?)? = nil) -> ReplyWaiter {
        let waiter = ReplyWaiter(decode: decode, read: read)
        begin(op, params, into: waiter)
        return waiter
    }

    /// `begin` with a waiter made beforehand (so it can be queued before its reply can come).
    /// `connecting: false` only uses a live connection (from the client's own reader thread a
    /// reconnect, with its hello and sign-in, must not run); without one the waiter fails, and
    /// its reader falls back to asking itself.
    func begin<P: Encodable>(_ op: String, _ params: P, into waiter: ReplyWaiter, connecting: Bool = true) {
        do throws(WireError) {
            guard connecting || connection.withLock({ $0 }) != nil else {
                throw WireError(.networkUnavailable, "The mirror's connection to the sync-service closed.")
            }
            let client = try client().client
            waiter.client = client
            client.send(op, params, reader: waiter.resultReader) { waiter.resolve($0) }
        } catch {
            waiter.resolve(.failure(error))
        }
    }

    /// The reply to a request sent with `begin`; a connection that died while idle gets the
    /// one fresh try `request` gives.
    func finish<P: Encodable>(_ waiter: ReplyWaiter, _ op: String, _ params: P) -> Result<JSONValue, WireError> {
        let result = waiter.wait()
        guard case let .failure(error) = result, [.connectionClosed, .networkUnavailable, .timedOut].contains(error.code) else { return result }
        // Only the connection this request went out on: with batches in flight, an earlier
        // one's retry may already have connected again, and that connection is not broken.
        connection.withLock { live in
            if let sentOn = waiter.client, let current = live?.client, current !== sentOn { return }
            live?.client.close()
            live = nil
        }
        guard error.code == .connectionClosed else { return result }
        do { return .success(try request(op, params, retried: true)) } catch { return .failure(error) }
    }

    /// `call` as a Result, for callers that handle some error codes and rethrow the rest.
    func attempt<P: Encodable>(_ op: String, _ params: P) -> Result<JSONValue, WireError> {
        do { return .success(try request(op, params)) } catch { return .failure(error) }
    }

    var user: String? { connection.withLock { $0?.user } }
}

/// One reply awaited by a blocking thread (the mirror's threads are never Swift tasks).
final class ReplyWaiter: Sendable {
    private let reply = Mutex<Result<JSONValue, WireError>?>(nil)
    /// Runs on the client's reader thread when a reply succeeds, so that work is done before
    /// the waiting thread wakes (a fetch decodes the next page while it applies this one).
    private let decode: (@Sendable (JSONValue) -> any Sendable)?
    /// Reads a success reply from its bytes instead (`WireClient.ResultReader`), on the same
    /// thread; nil from it leaves the reply to be parsed, and then to `decode`.
    private let read: (@Sendable (UnsafeBufferPointer<UInt8>) -> (any Sendable)?)?
    private let decodedValue = Mutex<(any Sendable)?>(nil)

    init(decode: (@Sendable (JSONValue) -> any Sendable)? = nil, read: (@Sendable (UnsafeBufferPointer<UInt8>) -> (any Sendable)?)? = nil) {
        self.decode = decode
        self.read = read
    }

    /// `read` as the client's reader: what it reads is kept as the decoded value.
    var resultReader: WireClient.ResultReader? {
        guard let read else { return nil }
        return { [self] bytes in
            guard let value = read(bytes) else { return false }
            decodedValue.withLock { $0 = value }
            return true
        }
    }

    /// What `decode` made of the reply, once `wait` has returned a success.
    func decoded<T>(as type: T.Type) -> T? { decodedValue.withLock { $0 as? T } }
    private let sentOn = Mutex<WireClient?>(nil)
    /// The connection the request went out on.
    var client: WireClient? {
        get { sentOn.withLock { $0 } }
        set { sentOn.withLock { $0 = newValue } }
    }
    private let semaphore = DispatchSemaphore(value: 0)

    func resolve(_ result: Result<JSONValue, WireError>) {
        if let decode, case let .success(value) = result, decodedValue.withLock({ $0 == nil }) {
            let decoded = decode(value)
            decodedValue.withLock { $0 = decoded }
        }
        reply.withLock { $0 = result }
        semaphore.signal()
    }

    func wait() -> Result<JSONValue, WireError> {
        semaphore.wait()
        return reply.withLock { $0! }
    }

    /// Whether the reply is here and a success, without waiting for it or taking it.
    var succeeded: Bool {
        reply.withLock { reply in if case .success = reply { true } else { false } }
    }
}
