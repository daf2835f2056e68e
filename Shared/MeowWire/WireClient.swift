import Foundation
import Synchronization

/// A client for either service: hello, typed requests, pipelining, events, timeouts.
///
/// A reader thread matches replies to requests by id, so any number of requests may be in
/// flight at once; events arrive on `events`.
///
/// ```swift
/// let client = try WireClient(socketPath: "/tmp/meow/store.sock")
/// let hello = try await client.hello(client: "my-tool")
/// let pong: PingResult = try await client.call("ping", Empty(), as: PingResult.self)
/// ```
public final class WireClient: Sendable {
    public typealias Completion = @Sendable (Result<JSONValue, WireError>) -> Void
    /// Reads a success reply's `result` straight from the reply's bytes, on the reader thread,
    /// for replies too large to be worth a JSON tree that is read once (a fetched page of
    /// records). Answers false when it cannot (the reply is then parsed as usual, and the
    /// completion gets the tree); when it answers true the completion gets `.success(.null)`:
    /// what it read is the reader's to keep. Used only for replies in the services' own form,
    /// `{"id":<integer>,"ok":true,"result":…}`.
    public typealias ResultReader = @Sendable (_ result: UnsafeBufferPointer<UInt8>) -> Bool

    public let socketPath: String
    public let defaultTimeout: Duration
    public let events: AsyncStream<WireEvent>

    private let fd: Int32
    private let eventContinuation: AsyncStream<WireEvent>.Continuation
    private let state = Mutex(State())
    private let writeLock = Mutex(())
    /// Frames are written from here, in order, so `send` returns at once: a frame larger than
    /// the socket's buffer (a batch of records) would otherwise block the caller until the
    /// service has finished the request before it, and a caller with several requests in
    /// flight could not work while the service does.
    private let writer = DispatchQueue(label: "meowwire.client.writer")
    private let maxFrameBytes: Int

    private struct State {
        var nextID = 1
        var pending: [RequestID: Pending] = [:]
        var readers: [RequestID: ResultReader] = [:]
        var closedError: WireError?
        /// When the earliest timer armed and not yet run fires; nil when none is armed.
        var timerAt: DispatchTime?
        /// Frames handed to `writer` and not yet written: while there are any, later frames
        /// queue behind them.
        var queuedWrites = 0
    }

    /// A request awaiting its reply, and when it times out.
    private struct Pending {
        var completion: Completion
        var deadline: DispatchTime
        var op: String
        var limit: Duration
    }

    /// The size of the last request written, to give the next one's text its room.
    private let requestCapacity = Mutex(256)

    /// Connects (no hello yet: call `hello`, or send raw requests to see what a service says).
    public init(socketPath: String, timeout: Duration = .seconds(30),
                maxFrameBytes: Int = WireLimits.defaultMaxFrameBytes) throws(WireError) {
        self.socketPath = socketPath
        self.defaultTimeout = timeout
        self.maxFrameBytes = maxFrameBytes
        fd = try UnixSocket.connect(path: socketPath)
        (events, eventContinuation) = AsyncStream.makeStream(of: WireEvent.self, bufferingPolicy: .unbounded)
        let thread = Thread { [self] in readLoop() }
        thread.name = "wire-client-reader"
        thread.start()
    }

    deinit {
        SystemSocket.close(fd)
    }

    /// Closes the connection; pending requests fail with `connectionClosed`.
    public func close() {
        SystemSocket.shutdownBoth(fd)
    }

    // MARK: Requests

    /// Sends hello and returns the service's answer.
    @discardableResult
    public func hello(client: String, credential: String? = nil, environment: String? = nil,
                      minVersion: Int = WireLimits.minProtocolVersion,
                      maxVersion: Int = WireLimits.maxProtocolVersion) async throws(WireError) -> HelloResult {
        try await call("hello", HelloParams(minVersion: minVersion, maxVersion: maxVersion, client: client,
                                            credential: credential, environment: environment), as: HelloResult.self)
    }

    /// Sends one request and decodes its result as `R`.
    public func call<P: Encodable, R: Decodable>(_ op: String, _ params: P, as type: R.Type,
                                                 timeout: Duration? = nil) async throws(WireError) -> R {
        let value = try await call(op, params, timeout: timeout)
        do {
            return try value.decode(R.self)
        } catch {
            throw WireError(.internalError, "The reply to '\(op)' did not decode as \(R.self): \(error)")
        }
    }

    /// Sends one request and returns its result as JSON.
    public func call<P: Encodable>(_ op: String, _ params: P, timeout: Duration? = nil) async throws(WireError) -> JSONValue {
        let result: Result<JSONValue, WireError> = await withCheckedContinuation { continuation in
            send(op, params, timeout: timeout) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Sends one request whose params are a JSON object literal.
    public func call(_ op: String, _ params: [String: JSONValue], timeout: Duration? = nil) async throws(WireError) -> JSONValue {
        try await call(op, JSONValue.object(params), timeout: timeout)
    }

    /// Blocking form of `call`, for command-line tools and threads outside Swift concurrency.
    public func callBlocking<P: Encodable>(_ op: String, _ params: P, timeout: Duration? = nil) throws(WireError) -> JSONValue {
        let box = Mutex<Result<JSONValue, WireError>?>(nil)
        let semaphore = DispatchSemaphore(value: 0)
        send(op, params, timeout: timeout) { result in
            box.withLock { $0 = result }
            semaphore.signal()
        }
        semaphore.wait()
        return try box.withLock { $0! }.get()
    }

    /// Sends a request without waiting; `completion` runs on the reader thread (or a timer) once.
    /// `reader`: reads the success reply's result from its bytes (`ResultReader`).
    @discardableResult
    public func send<P: Encodable>(_ op: String, _ params: P, timeout: Duration? = nil, reader: ResultReader? = nil,
                                   completion: @escaping Completion) -> RequestID {
        let id: RequestID = state.withLock { state in
            defer { state.nextID += 1 }
            return .int(state.nextID)
        }
        let body: [UInt8]
        do {
            body = try Self.requestBody(id: id, op: op, params: params, capacity: requestCapacity.withLock { $0 })
            requestCapacity.withLock { $0 = min(max(body.count, 256), 4 << 20) }
        } catch {
            completion(.failure(WireError(.invalidArguments, "Could not encode params for '\(op)': \(error)")))
            return id
        }
        let limit = timeout ?? defaultTimeout
        let deadline = DispatchTime.now() + .nanoseconds(Int(limit.nanoseconds))
        let (closed, arm): (WireError?, Bool) = state.withLock { state in
            if let error = state.closedError { return (error, false) }
            state.pending[id] = Pending(completion: completion, deadline: deadline, op: op, limit: limit)
            if let reader { state.readers[id] = reader }
            guard state.timerAt.map({ deadline < $0 }) ?? true else { return (nil, false) }
            state.timerAt = deadline
            return (nil, true)
        }
        if let closed { completion(.failure(closed)); return id }
        // One timer for the earliest deadline, not one per request: arming a timer woke the
        // dispatch manager thread, which cost a request about as much as its own reply did.
        if arm { armTimer(at: deadline) }
        write(FrameEncoder.frame(body), op: op)
        return id
    }

    private func armTimer(at deadline: DispatchTime) {
        DispatchQueue.global().asyncAfter(deadline: deadline) { [weak self] in self?.expire() }
    }

    /// Fails the requests whose deadline has passed, and arms the timer for the next one.
    private func expire() {
        let now = DispatchTime.now()
        let (expired, next): ([(RequestID, Pending)], DispatchTime?) = state.withLock { state in
            let expired = state.pending.filter { $0.value.deadline <= now }
            for (id, _) in expired {
                state.pending.removeValue(forKey: id)
                state.readers.removeValue(forKey: id)
            }
            if let armed = state.timerAt, armed <= now { state.timerAt = nil }
            guard let earliest = state.pending.values.lazy.map(\.deadline).min(),
                  state.timerAt.map({ earliest < $0 }) ?? true else { return (Array(expired), nil) }
            state.timerAt = earliest
            return (Array(expired), earliest)
        }
        if let next { armTimer(at: next) }
        for (id, pending) in expired {
            pending.completion(.failure(WireError(.timedOut, "No reply to '\(pending.op)' (id \(id)) within \(pending.limit).")))
        }
    }

    /// Writes a frame on this thread when no earlier one waits for `writer` and the socket
    /// takes it whole without blocking (a request is usually small); the rest goes to `writer`,
    /// behind any frame queued before it. Handing every frame to `writer` woke its thread once
    /// a request.
    private func write(_ frame: [UInt8], op: String) {
        let written: Int? = writeLock.withLock { _ in
            // Counted while the lock is held, so no frame gets in after a partly written one.
            state.withLock { state in
                guard state.queuedWrites == 0 else { state.queuedWrites += 1; return 0 }
                return nil
            } ?? {
                let written = frame.withUnsafeBytes { UnixSocket.writeAvailable(fd: fd, $0) }
                if written >= 0, written < frame.count { state.withLock { $0.queuedWrites += 1 } }
                return written
            }()
        }
        guard let written, written < frame.count else { return }
        if written < 0 {
            failAll(WireError(.connectionClosed, "The connection to \(socketPath) closed while sending '\(op)'."))
            return
        }
        writer.async { [self] in
            let sent = frame.withUnsafeBytes { whole in
                writeLock.withLock { _ in UnixSocket.writeAll(fd: fd, UnsafeRawBufferPointer(rebasing: whole[written...])) == .written }
            }
            state.withLock { $0.queuedWrites -= 1 }
            if !sent {
                failAll(WireError(.connectionClosed, "The connection to \(socketPath) closed while sending '\(op)'."))
            }
        }
    }

    /// A request's JSON body. JSON params (most calls, and the mirror's record batches) are
    /// written directly; other Encodable params go through JSONTextEncoder.
    /// Params that write their own text (`JSONTextWritable`) are sent as they write it.
    /// `capacity`: the room the text starts with (a client passes its last request's size).
    static func requestBody<P: Encodable>(id: RequestID, op: String, params: P, capacity: Int = 256) throws -> [UInt8] {
        let writable = params as? any JSONTextWritable
        let json = params as? JSONValue
        guard writable != nil || json != nil else {
            return try JSONTextEncoder().bytes(RequestEnvelope(id: id, op: op, params: params))
        }
        var text = ""
        // Room for the text up front (a batch of records grew by doubling, copied each time).
        text.reserveCapacity(capacity)
        text += "{\"id\":"
        switch id {
        case let .int(number): text += String(number)
        case let .string(name): JSONWriter.appendString(name, to: &text)
        }
        text += ",\"op\":"
        JSONWriter.appendString(op, to: &text)
        text += ",\"params\":"
        if let json {
            JSONWriter.append(json, to: &text)
        } else if let writable, !writable.writeJSON(to: &text) {
            return try JSONTextEncoder().bytes(RequestEnvelope(id: id, op: op, params: params))
        }
        text += "}"
        return Array(text.utf8)
    }

    /// Writes raw bytes unchanged (tests use this to send malformed input).
    /// After every frame `send` queued before it.
    public func writeRaw(_ bytes: [UInt8]) -> Bool {
        writer.sync { writeBytes(bytes) }
    }

    private func writeBytes(_ bytes: [UInt8]) -> Bool {
        writeLock.withLock { _ in UnixSocket.writeAll(fd: fd, bytes) == .written }
    }

    // MARK: Reading

    private func readLoop() {
        var decoder = FrameDecoder(maxFrameBytes: maxFrameBytes)
        let jsonDecoder = JSONValueDecoder()
        var buffer = [UInt8](repeating: 0, count: 65536)
        var closeReason = WireError(.connectionClosed, "The service closed the connection (\(socketPath)).")
        reading: while true {
            let n = buffer.withUnsafeMutableBytes { UnixSocket.read(fd: fd, into: $0) }
            if n <= 0 { break }
            decoder.append(buffer[0..<n])
            do {
                while let frame = try decoder.nextFrame() {
                    if readDirectly(frame) { continue }
                    guard let message = try? jsonDecoder.decode(IncomingMessage.self, from: frame) else { continue }
                    dispatch(message)
                }
            } catch {
                closeReason = error.wireError
                break reading
            }
        }
        failAll(closeReason)
        eventContinuation.finish()
    }

    private static let replySuccess = Array(#","ok":true,"result":"#.utf8)

    /// A success reply in the services' own form, its envelope read from the bytes: its result
    /// read by the request's `ResultReader`, or else parsed alone (decoding the envelope through
    /// `Decodable` cost a small reply more than its result did). False when the frame is not
    /// such a reply, or its result is not one JSON value: it is then parsed whole, as usual.
    private func readDirectly(_ frame: [UInt8]) -> Bool {
        frame.withUnsafeBufferPointer { bytes -> Bool in
            // `{"id":` digits `,"ok":true,"result":` … `}`: the services' own reply form.
            guard let (number, index) = CompactEnvelope.leadingID(bytes), CompactEnvelope.has(Self.replySuccess, in: bytes, at: index),
                  index + Self.replySuccess.count < bytes.count else { return false }
            let id = RequestID.int(number)
            let result = UnsafeBufferPointer(rebasing: bytes[(index + Self.replySuccess.count)..<(bytes.count - 1)])
            let value: JSONValue
            if let reader = state.withLock({ $0.readers[id] }), reader(result) {
                value = .null
            } else {
                guard let tree = try? JSONParser.parse(result) else { return false }
                value = tree
            }
            let pending = state.withLock { state in
                state.readers.removeValue(forKey: id)
                return state.pending.removeValue(forKey: id)
            }
            pending?.completion(.success(value))
            return true
        }
    }

    private func dispatch(_ message: IncomingMessage) {
        if let name = message.event, message.ok == nil {
            eventContinuation.yield(WireEvent(name: name, seq: message.seq ?? 0, data: message.data ?? .object([:])))
            return
        }
        let outcome: Result<JSONValue, WireError> = message.ok == true
            ? .success(message.result ?? .object([:]))
            : .failure(message.error ?? WireError(.internalError, "An error reply without an error object."))
        guard let id = message.id else {
            // A connection-level error (id null): the service is about to close; tell everyone.
            if case let .failure(error) = outcome { failAll(error) }
            return
        }
        if let pending = state.withLock({ state in
            state.readers.removeValue(forKey: id)
            return state.pending.removeValue(forKey: id)
        }) {
            pending.completion(outcome)
        }
    }

    private func failAll(_ error: WireError) {
        let pending = state.withLock { state -> [Completion] in
            if state.closedError == nil { state.closedError = error }
            defer { state.pending.removeAll(); state.readers.removeAll() }
            return state.pending.values.map(\.completion)
        }
        for completion in pending { completion(.failure(error)) }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
