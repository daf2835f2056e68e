#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire

/// Serves one connection on its own thread: reads frames, answers requests in order (so
/// pipelined requests are answered as they were sent), writes replies batched per read.
final class Connection {
    let handle: ConnectionHandle
    private let server: ServiceServer
    private let registry: OperationRegistry
    private let configuration: ServiceConfiguration
    private let logger: Logger
    private var decoder = JSONValueDecoder()
    private let encoder = JSONTextEncoder()
    private var outbound: [UInt8] = []
    /// The size of the last reply written as text (`sendSuccess`), to make the next one's room.
    private var replyCapacity = 1024

    init(handle: ConnectionHandle, server: ServiceServer) {
        self.handle = handle
        self.server = server
        self.registry = server.registry
        self.configuration = server.configuration
        self.logger = Logger(label: "\(server.definition.name).connection")
        decoder.userInfo[IncomingRequest.registryKey] = registry
    }

    /// Serves until the connection ends; returns whether it completed hello (its slot stopped
    /// counting as pending then).
    func serve() -> Bool {
        let fd = handle.fd
        var frames = FrameDecoder(maxFrameBytes: configuration.maxFrameBytes)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let frameTimeout = Duration.milliseconds(configuration.frameTimeoutMilliseconds)
        // Both deadlines are absolute: a peer trickling bytes does not move them.
        var helloDeadline: ContinuousClock.Instant? = .now + .milliseconds(configuration.helloTimeoutMilliseconds)
        var frameDeadline: ContinuousClock.Instant?
        var charged = 0
        defer { _ = server.frameBudget.recharge(from: charged, to: 0) }
        reading: while true {
            if let deadline = Self.earliest(frameDeadline, helloDeadline) {
                let remaining = deadline - .now
                let expired = remaining <= .zero
                    || (!UnixSocket.waitReadable(fd: fd, timeoutMilliseconds: Self.milliseconds(remaining)) && ContinuousClock.now >= deadline)
                if expired {
                    if let helloDeadline, ContinuousClock.now >= helloDeadline {
                        closeWithError(WireError(.helloTimeout, "No hello within \(configuration.helloTimeoutMilliseconds) ms of connecting (--hello-timeout-ms); the connection will be closed. Send hello first.",
                                                 details: ["timeoutMilliseconds": .int(configuration.helloTimeoutMilliseconds)]))
                    } else {
                        closeWithFrameError(.truncatedFrame(expected: expectedLength(frames), received: max(0, frames.bufferedByteCount - 4)))
                    }
                    break
                }
            }
            let n = buffer.withUnsafeMutableBytes { UnixSocket.read(fd: fd, into: $0) }
            if n <= 0 {
                if frames.bufferedByteCount > 0 {
                    closeWithFrameError(.truncatedFrame(expected: expectedLength(frames), received: max(0, frames.bufferedByteCount - 4)))
                }
                break
            }
            let hadPartialFrame = frames.bufferedByteCount > 0
            frames.append(buffer[0..<n])
            var finishedFrame = false
            do {
                var started = ContinuousClock.now
                while let body = try frames.nextFrame() {
                    finishedFrame = true
                    handleFrame(body)
                    if helloDeadline != nil, noteHello(&helloDeadline) { flush(); break reading }
                    // Replies to quick requests go out together (a pipelined client's pings
                    // cost one write for many); once the unsent ones took a while, they go at
                    // once, so a client that already sent its next request (a mirror's second
                    // batch) is not kept waiting for the answer while that one is worked on.
                    if outbound.count > 256 * 1024 || ContinuousClock.now - started > Self.replyHoldLimit {
                        flush()
                        started = ContinuousClock.now
                    }
                }
                flush()
            } catch {
                flush()
                closeWithFrameError(error)
                break reading
            }
            let buffered = frames.bufferedByteCount
            if buffered == 0 {
                frameDeadline = nil
            } else if !hadPartialFrame || finishedFrame {
                // The unfinished frame's first byte came in this read.
                frameDeadline = .now + frameTimeout
            }
            let charge = FrameBudget.charge(forBuffered: buffered)
            if charge != charged {
                guard server.frameBudget.recharge(from: charged, to: charge) else {
                    closeWithError(WireError(.bufferBudgetExceeded,
                                             "This frame would take the service's buffered unfinished frames past \(server.frameBudget.limit) bytes (--max-buffered-bytes); the connection will be closed. Retry later, or send smaller frames.",
                                             details: ["limit": .int(server.frameBudget.limit), "buffered": .int(buffered)]))
                    break
                }
                charged = charge
            }
        }
        flush()
        return helloDeadline == nil
    }

    /// After a frame on a connection that has not said hello: notes a completed hello (true
    /// when the connection must close instead, after too many failed hellos).
    private func noteHello(_ deadline: inout ContinuousClock.Instant?) -> Bool {
        if handle.helloDone {
            deadline = nil
            server.slots.greeted()
            return false
        }
        return handle.closeRequested
    }

    /// `duration` in whole milliseconds, rounded up (a poll timeout).
    private static func milliseconds(_ duration: Duration) -> Int32 {
        Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000 + 1)
    }

    private static func earliest(_ a: ContinuousClock.Instant?, _ b: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }

    /// The length the buffered partial frame announced (for the truncatedFrame message).
    private func expectedLength(_ frames: FrameDecoder) -> Int {
        frames.announcedLength ?? 0
    }

    private func closeWithError(_ error: WireError) {
        logger.info("closing connection", ["connection": .int(handle.id), "code": .string(error.code.rawValue)])
        send(ErrorReply(id: nil, error: error))
        flush()
    }

    private func closeWithFrameError(_ error: FrameError) {
        logger.info("frame error; closing connection", ["connection": .int(handle.id), "code": .string(error.wireError.code.rawValue)])
        send(ErrorReply(id: nil, error: error.wireError))
        flush()
    }

    /// How long replies may wait to be written together.
    static let replyHoldLimit = Duration.microseconds(500)

    private func flush() {
        guard !outbound.isEmpty else { return }
        handle.write(outbound)
        outbound.removeAll(keepingCapacity: true)
    }

    /// `{"id":…,"ok":true,"result":…}` with only the result going through JSONTextEncoder: the
    /// envelope is three fixed keys, and encoding it generically cost a fifth of a ping.
    private func sendSuccess(id: RequestID, reply: OperationReply) {
        let result: any Encodable
        switch reply {
        case let .encodable(value): result = value
        case let .text(value): result = value
        }
        do {
            if case let .text(writable) = reply {
                // The reply is written into one text, made as large as the last one up front,
                // and framed from it: a large change page is written once, never regrown and copied.
                var text = ""
                text.reserveCapacity(replyCapacity)
                text += #"{"id":"#
                switch id {
                case let .int(value): text += String(value)
                case let .string(value): JSONWriter.appendString(value, to: &text)
                }
                text += #","ok":true,"result":"#
                if writable.writeJSON(to: &text) {
                    text += "}"
                    guard text.utf8.count <= configuration.maxFrameBytes else { return sendTooLarge(id: id, bytes: text.utf8.count) }
                    Self.appendFrame(text.utf8, to: &outbound)
                    replyCapacity = min(max(text.utf8.count, 1024), 4 << 20)
                    return
                }
            }
            let resultJSON = try encoder.bytes(result)
            var head = #"{"id":"#
            switch id {
            case let .int(value): head += String(value)
            case let .string(value): JSONWriter.appendString(value, to: &head)
            }
            head += #","ok":true,"result":"#
            var body: [UInt8] = []
            body.reserveCapacity(resultJSON.count + head.utf8.count + 1)
            body.append(contentsOf: head.utf8)
            body.append(contentsOf: resultJSON)
            body.append(UInt8(ascii: "}"))
            guard body.count <= configuration.maxFrameBytes else { return sendTooLarge(id: id, bytes: body.count) }
            Self.appendFrame(body, to: &outbound)
        } catch {
            logger.error("could not encode a reply", ["error": .string("\(error)")])
            send(ErrorReply(id: id, error: WireError(.internalError, "The reply could not be encoded: \(error)")))
        }
    }

    /// A reply over the frame limit would make the client close the connection (frameTooLarge)
    /// and lose every later reply on it: the request fails instead, and the connection goes on.
    private func sendTooLarge(id: RequestID, bytes: Int) {
        logger.warning("reply over the frame limit", ["bytes": .int(bytes), "limit": .int(configuration.maxFrameBytes)])
        send(ErrorReply(id: id, error: WireError(.limitExceeded,
            "The reply would be \(bytes) bytes, over the frame limit of \(configuration.maxFrameBytes) (limits.maxFrameBytes in hello). Ask for less: a fetch's limit and offset page through a large result.",
            details: ["replyBytes": .int(bytes), "maxFrameBytes": .int(configuration.maxFrameBytes)])))
    }

    private func send<T: Encodable>(_ message: T) {
        do {
            let body = try encoder.bytes(message)
            Self.appendFrame(body, to: &outbound)
        } catch {
            logger.error("could not encode a reply", ["error": .string("\(error)")])
        }
    }

    /// `FrameEncoder.appendFrame` for the two bodies a reply has, with their types known here:
    /// called generically across modules, its `append(contentsOf:)` looked up the body's
    /// iterator type at run time, which the first reply of a process paid for by scanning
    /// every conformance record (about half a million instructions, callgrind).
    private static func appendFrame(_ body: String.UTF8View, to out: inout [UInt8]) {
        appendLength(body.count, to: &out)
        out.append(contentsOf: body)
    }

    private static func appendFrame(_ body: [UInt8], to out: inout [UInt8]) {
        appendLength(body.count, to: &out)
        out.append(contentsOf: body)
    }

    /// The frame's 4-byte big-endian length, as `FrameEncoder` writes it.
    private static func appendLength(_ count: Int, to out: inout [UInt8]) {
        let n = UInt32(count)
        out.append(UInt8(truncatingIfNeeded: n >> 24))
        out.append(UInt8(truncatingIfNeeded: n >> 16))
        out.append(UInt8(truncatingIfNeeded: n >> 8))
        out.append(UInt8(truncatingIfNeeded: n))
    }

    // MARK: Requests

    private static let largeRequestBytes = 256 * 1024
    private static let releaser = DispatchQueue(label: "connection.release", qos: .utility)

    func handleFrame(_ body: [UInt8]) {
        var request: IncomingRequest
        do {
            // One pass over the bytes, then typed params from the tree (see JSONParser for why),
            // unless the op's params read themselves from the bytes.
            request = try readDirectly(body) ?? decoder.decode(IncomingRequest.self, from: JSONParser.parse(body))
        } catch {
            send(ErrorReply(id: nil, error: Self.bodyError(body, error)))
            return
        }
        if request.paramsUnread, let op = request.op { request.params = readParams(op: op, body: body) }
        if let fieldError = request.fieldError {
            send(ErrorReply(id: request.id, error: fieldError))
            return
        }
        guard let id = request.id, let op = request.op else { return }
        defer {
            // A large request's params (a batch of 400 records: thousands of small allocations)
            // are freed on another thread once answered; freeing them here was a twentieth of
            // a records.modify.
            if body.count >= Self.largeRequestBytes, let params = request.params {
                request.params = nil  // the closure holds the last reference
                Self.releaser.async { withExtendedLifetime(params) {} }
            }
        }
        do {
            sendSuccess(id: id, reply: try perform(op: op, id: id, request: request))
        } catch let error as WireError {
            send(ErrorReply(id: id, error: error))
        } catch let error as ServiceError {
            logger.info("request failed", ["op": .string(op), "code": .string(error.wire.code.rawValue), "origin": .string(error.origin)])
            send(ErrorReply(id: id, error: error.wire))
        } catch {
            logger.error("unmapped error; answered internalError", ["op": .string(op), "error": .string(String(reflecting: error))])
            send(ErrorReply(id: id, error: WireError(.internalError, "The service failed on '\(op)': \(error)")))
        }
    }

    private static let requestOp = Array(#","op":""#.utf8)
    private static let requestParams = Array("\",\"params\":".utf8)

    /// A request in the form clients of this package write, `{"id":<integer>,"op":"<name>",
    /// "params":…}`, its envelope read from the bytes: params that read themselves
    /// (`JSONReadable`: a batch of records needs no JSON tree) are read so, others decoded from
    /// the tree of the params alone (decoding the envelope through `Decodable` was a tenth of a
    /// small request). Nil for any other request (an unknown op, another form), parsed as usual
    /// (and params that read themselves then read from their bytes by the same reader, `readParams`).
    private func readDirectly(_ body: [UInt8]) -> IncomingRequest? {
        body.withUnsafeBufferPointer { bytes -> IncomingRequest? in
            guard let (number, afterID) = CompactEnvelope.leadingID(bytes), CompactEnvelope.has(Self.requestOp, in: bytes, at: afterID) else { return nil }
            let nameStart = afterID + Self.requestOp.count
            var index = nameStart
            // Op names are plain ASCII (letters, digits, dots): anything else takes the parser.
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), index - nameStart < 64 {
                let byte = bytes[index]
                guard byte >= 0x21, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            guard index < bytes.count, CompactEnvelope.has(Self.requestParams, in: bytes, at: index),
                  index + Self.requestParams.count < bytes.count else { return nil }
            let op = String(decoding: UnsafeBufferPointer(rebasing: bytes[nameStart..<index]), as: UTF8.self)
            guard let entry = registry.entry(op) else { return nil }
            let params = UnsafeBufferPointer(rebasing: bytes[(index + Self.requestParams.count)..<(bytes.count - 1)])
            guard let read = entry.readParams else {
                // Params that are not one JSON value (more members after them): parsed whole.
                guard let tree = try? JSONParser.parse(params) else { return nil }
                return IncomingRequest(id: .int(number), op: op, params: OperationRegistry.params(of: entry, op: op, from: tree == .null ? JSONValue?.none : tree))
            }
            do throws(MessageReadError) {
                return IncomingRequest(id: .int(number), op: op, params: .success(try read(params)))
            } catch {
                // Params that are not JSON: the body is judged as a whole, with the parser's error.
                if case .malformed = error.problem { return nil }
                return IncomingRequest(id: .int(number), op: op, params: .failure(error.wireError(op: op)))
            }
        }
    }

    private static let emptyParams = Array("{}".utf8)

    /// The params of a request parsed whole whose op reads its params itself: the last `params`
    /// member of the body (valid JSON, as its parse showed), or `{}` when absent or null.
    private func readParams(op: String, body: [UInt8]) -> Result<any Sendable, WireError>? {
        guard let read = registry.entry(op)?.readParams else { return nil }
        return body.withUnsafeBufferPointer { bytes -> Result<any Sendable, WireError> in
            var scanner = JSONScanner(bytes)
            var range: Range<Int>?
            _ = scanner.object { key, scanner in
                scanner.skipWhitespace()
                let start = scanner.index
                guard scanner.skipValue() else { return false }
                if key == "params" { range = start..<scanner.index }
                return true
            }
            do throws(MessageReadError) {
                if let range, bytes[range.lowerBound] != UInt8(ascii: "n") {
                    return .success(try read(UnsafeBufferPointer(rebasing: bytes[range])))
                }
                return .success(try Self.emptyParams.withUnsafeBufferPointer { (empty) throws(MessageReadError) in try read(empty) })
            } catch {
                return .failure(error.wireError(op: op))
            }
        }
    }

    private func perform(op: String, id: RequestID, request: IncomingRequest) throws -> OperationReply {
        guard op == "hello" || handle.helloDone else {
            throw WireError(.helloRequired, "Send hello first: {\"id\":1,\"op\":\"hello\",\"params\":{\"minVersion\":1,\"maxVersion\":1,\"client\":\"<your name>\"}}.",
                            details: ["op": .string(op)])
        }
        guard let entry = registry.entry(op) else {
            throw WireError(.unknownOp, "\(server.definition.name) has no op named '\(op)'. The ops it answers are listed by 'info' (result.ops).",
                            details: ["op": .string(op)])
        }
        switch entry.access {
        case .afterHello: break
        case .authenticated:
            guard handle.principal != nil else {
                throw WireError(.notAuthenticated, "'\(op)' needs a user: send hello with params.credential set to a user's credential.",
                                details: ["op": .string(op)])
            }
        case .admin:
            guard let principal = handle.principal else {
                throw WireError(.notAuthenticated, "'\(op)' is an admin operation: send hello with the admin credential.", details: ["op": .string(op)])
            }
            guard principal.isAdmin else {
                throw WireError(.permissionFailure, "'\(op)' is an admin operation and user '\(principal.user)' is not the admin.",
                                details: ["op": .string(op), "user": .string(principal.user)])
            }
        }
        guard let params = request.params else { throw WireError(.internalError, "params were not decoded for '\(op)'") }
        let context = RequestContext(requestID: id, op: op, connection: handle, logger: logger)
        // Each connection runs its requests on its own thread, one at a time: what the request
        // causes on this thread (a change push) can tell which connection it came from.
        RequestOrigin.set(handle.id)
        defer { RequestOrigin.set(nil) }
        return try entry.run(try params.get(), context)
    }

    /// Why a body is not a request: invalid UTF-8, invalid JSON, or JSON that is not an object.
    static func bodyError(_ body: [UInt8], _ error: any Error) -> WireError {
        if String(validating: body, as: UTF8.self) == nil {
            return WireError(.invalidUTF8, "The frame's body is not valid UTF-8; a body must be one UTF-8 JSON object.")
        }
        if let failure = error as? JSONParser.Failure {
            return WireError(.invalidJSON, "The frame's body is not valid JSON (\(failure); \(body.count) bytes). A body must be one JSON object.",
                             details: ["bytes": .int(body.count)])
        }
        if case let DecodingError.typeMismatch(_, context) = error, context.codingPath.isEmpty {
            let first = body.first { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }
            let kind: String
            switch first {
            case UInt8(ascii: "["): kind = "an array"
            case UInt8(ascii: "\""): kind = "a string"
            case UInt8(ascii: "t"), UInt8(ascii: "f"): kind = "a boolean"
            case UInt8(ascii: "n"): kind = "null"
            default: kind = "a number"
            }
            return WireError(.notAnObject, "The frame's body is \(kind); it must be a JSON object {\"id\":…,\"op\":…,\"params\":{…}}.",
                             details: ["found": .string(kind)])
        }
        return WireError(.invalidJSON, "The frame's body is not valid JSON (\(body.count) bytes). A body must be one JSON object.",
                         details: ["bytes": .int(body.count)])
    }
}

/// An error raised inside a service: the wire error it becomes, plus where it was raised (for
/// logs only; never sent to peers).
public struct ServiceError: Error, Sendable {
    public var wire: WireError
    public var file: String
    public var line: Int
    public init(_ code: ErrorCode, _ message: String, details: [String: JSONValue] = [:],
                file: String = #fileID, line: Int = #line) {
        self.wire = WireError(code, message, details: details)
        self.file = file
        self.line = line
    }
    public var origin: String { "\(file):\(line)" }

    /// The wire error `error` carries when it is one of the two a service throws (a
    /// `WireError`, or a `ServiceError` with its origin); nil for anything else.
    public static func wire(of error: any Error) -> WireError? {
        (error as? WireError) ?? (error as? ServiceError)?.wire
    }
}

/// The connection whose request the current thread is running, if any.
public enum RequestOrigin {
    /// A thread-specific slot holding the id plus one (0, the empty slot, is no request): set
    /// and cleared around every request, so it must not allocate as a thread dictionary does.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left for RequestOrigin")
        return key
    }()

    /// The connection's `ConnectionHandle.id`.
    public static var current: Int? {
        guard let slot = pthread_getspecific(key) else { return nil }
        return Int(bitPattern: slot) - 1
    }

    static func set(_ id: Int?) { pthread_setspecific(key, id.flatMap { UnsafeRawPointer(bitPattern: $0 + 1) }) }
}
