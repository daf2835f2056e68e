#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import MeowWire
import Synchronization

/// The uid, gid and pid of a connected peer, from SO_PEERCRED.
public struct PeerCredentials: Sendable, Hashable, Codable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
}

/// A connection as handlers and the event hub see it: identity, hello state, subscriptions,
/// and a bounded queue of events written by its own serial queue, so a slow reader never
/// blocks whoever publishes.
public final class ConnectionHandle: Sendable {
    public let id: Int
    public let peer: PeerCredentials
    private static let logger = Logger(label: "connection")
    let fd: Int32
    private let maxEventQueueBytes: Int
    private let writeLock = Mutex(())
    private let state = Mutex(State())
    private let eventQueue: DispatchQueue

    struct State {
        var helloDone = false
        var clientName: String?
        var protocolVersion = 0
        var principal: Principal?
        var environment: String?
        var topics: Set<String> = []
        var attachments: [String: any Sendable] = [:]
        var failedHellos = 0
        var closeAfterReply = false
        // Events
        var nextSeq: UInt64 = 1
        var queued: [[UInt8]] = []
        var queuedBytes = 0
        var dropped = 0
        var draining = false
        var broken = false
    }

    init(id: Int, fd: Int32, peer: PeerCredentials, maxEventQueueBytes: Int) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.maxEventQueueBytes = maxEventQueueBytes
        self.eventQueue = DispatchQueue(label: "meow.connection.\(id).events")
    }

    public var principal: Principal? { state.withLock { $0.principal } }
    /// The environment hello chose (`ServiceDefinition.helloEnvironment`), nil for a service without any.
    public var environment: String? { state.withLock { $0.environment } }
    public var clientName: String? { state.withLock { $0.clientName } }
    public var helloDone: Bool { state.withLock { $0.helloDone } }
    public var topics: Set<String> { state.withLock { $0.topics } }

    func completeHello(client: String, version: Int, principal: Principal?, environment: String? = nil) {
        state.withLock {
            $0.helloDone = true
            $0.clientName = client
            $0.protocolVersion = version
            $0.principal = principal
            $0.environment = environment
        }
    }

    /// Counts a hello refused for its credential; returns the count on this connection.
    func recordFailedHello() -> Int { state.withLock { $0.failedHellos += 1; return $0.failedHellos } }

    /// Asks the connection's reader to close once the reply being made is written.
    func requestCloseAfterReply() { state.withLock { $0.closeAfterReply = true } }
    var closeRequested: Bool { state.withLock { $0.closeAfterReply } }

    func subscribe(_ topics: [String]) -> Set<String> { state.withLock { $0.topics.formUnion(topics); return $0.topics } }
    func unsubscribe(_ topics: [String]) -> Set<String> { state.withLock { $0.topics.subtract(topics); return $0.topics } }
    public func isSubscribed(to topic: String) -> Bool { state.withLock { $0.topics.contains(topic) } }

    /// Per-connection state a service keeps (e.g. the store-service's open contexts).
    public func attachment<T: Sendable>(_ key: String, as type: T.Type) -> T? {
        state.withLock { $0.attachments[key] as? T }
    }
    public func setAttachment(_ key: String, _ value: (any Sendable)?) {
        state.withLock { $0.attachments[key] = value }
    }

    // MARK: Writing

    /// Writes one whole frame (replies use this from the connection's own thread). On a send
    /// timeout or a closed peer the connection is shut down, which ends its reader.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        let outcome = writeLock.withLock { _ in UnixSocket.writeAll(fd: fd, bytes) }
        if outcome == .timedOut {
            Self.logger.warning("disconnecting a client that stopped reading (send timeout)", ["connection": .int(id)])
        }
        if outcome != .written { markBroken() }
        return outcome == .written
    }

    /// Closes the connection now, without a reply (fault injection: a dropped connection).
    public func disconnect() {
        markBroken()
    }

    /// Writes `bytes` as they are, then closes (fault injection: a partial frame).
    public func writeRawAndDisconnect(_ bytes: [UInt8]) {
        write(bytes)
        markBroken()
    }

    func markBroken() {
        let first = state.withLock { state -> Bool in
            defer { state.broken = true }
            return !state.broken
        }
        if first { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Queues an event; `dataJSON` is the already-encoded `data` object (shared by every
    /// subscriber). On overflow the queue is replaced by one `resyncRequired` event.
    public func push(event: String, dataJSON: [UInt8]) {
        let schedule = state.withLock { state -> Bool in
            guard !state.broken else { return false }
            if state.queuedBytes + dataJSON.count > maxEventQueueBytes {
                state.dropped += state.queued.count + 1
                state.queued.removeAll()
                state.queuedBytes = 0
                let notice = Array(#"{"reason":"The client did not read events fast enough; events were dropped. Refetch state.""#.utf8)
                    + Array(#","dropped":\#(state.dropped)}"#.utf8)
                state.queued.append(Self.eventFrame("resyncRequired", seq: state.nextSeq, data: notice))
                state.nextSeq += 1
                state.queuedBytes = notice.count
            } else {
                state.queued.append(Self.eventFrame(event, seq: state.nextSeq, data: dataJSON))
                state.nextSeq += 1
                state.queuedBytes += dataJSON.count
            }
            if state.draining { return false }
            state.draining = true
            return true
        }
        if schedule { eventQueue.async { [self] in drainEvents() } }
    }

    private func drainEvents() {
        while true {
            let batch = state.withLock { state -> [[UInt8]] in
                let frames = state.queued
                state.queued.removeAll()
                state.queuedBytes = 0
                if frames.isEmpty { state.draining = false }
                return frames
            }
            if batch.isEmpty { return }
            var bytes: [UInt8] = []
            for frame in batch { bytes.append(contentsOf: frame) }
            if !write(bytes) {
                state.withLock { $0.queued.removeAll(); $0.draining = false }
                return
            }
        }
    }

    /// Waits until queued events are written (or the connection broke). Used at shutdown.
    func flushEvents() {
        eventQueue.sync {}
    }

    static func eventFrame(_ name: String, seq: UInt64, data: [UInt8]) -> [UInt8] {
        var head = #"{"event":"#
        JSONWriter.appendString(name, to: &head)
        head += #","seq":\#(seq),"data":"#
        var body = Array(head.utf8)
        body.append(contentsOf: data)
        body.append(UInt8(ascii: "}"))
        return FrameEncoder.frame(body)
    }
}
