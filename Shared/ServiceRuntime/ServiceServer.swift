#if canImport(Glibc)
import Glibc
#endif
import CShim
import Foundation
import MeowWire
import Synchronization

/// Runs a service: binds (or adopts) the socket, accepts connections (a thread each), answers
/// the core ops, and on shutdown stops accepting, lets in-flight requests finish, closes every
/// connection and removes the socket.
///
/// ```swift
/// let server = try ServiceServer(definition: MyService(), configuration: configuration)
/// try server.run()   // returns after shutdown()
/// ```
public final class ServiceServer: Sendable {
    public let definition: any ServiceDefinition
    public let configuration: ServiceConfiguration
    public let events: EventHub
    let registry: OperationRegistry
    let statistics: ServerStatistics
    let slots: ConnectionSlots
    let frameBudget: FrameBudget
    private let logger: Logger
    private let connectionsDone = DispatchGroup()
    private let wakePipe: (read: Int32, write: Int32)
    private let listenerState = Mutex<(fd: Int32, boundPath: String?, stopping: Bool)>((-1, nil, false))
    private let dataLock = Mutex<ProcessLock?>(nil)

    public init(definition: any ServiceDefinition, configuration: ServiceConfiguration) throws {
        self.definition = definition
        self.configuration = configuration
        self.events = EventHub()
        self.logger = Logger(label: definition.name)
        let statistics = ServerStatistics(socketPath: configuration.socketPath)
        self.statistics = statistics
        self.slots = ConnectionSlots(configuration: configuration)
        self.frameBudget = FrameBudget(limit: configuration.maxBufferedBytes)
        var registry = OperationRegistry()
        CoreOperations.register(in: &registry, definition: definition, configuration: configuration,
                                statistics: statistics, events: events, frameBudget: frameBudget)
        definition.registerOperations(in: &registry)
        self.registry = registry
        statistics.setOpNames(registry.names)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw StartupError("pipe(): \(String(cString: strerror(errno)))") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        wakePipe = (fds[0], fds[1])
    }

    /// Starts the service and serves until `shutdown()`. Throws StartupError if it cannot start.
    public func run() throws {
        try lockDataDirectory()
        let listener: Listener
        do {
            try definition.start(events: events)
            listener = try Listener.open(path: configuration.socketPath, logger: logger)
        } catch {
            dataLock.withLock { $0?.release(); $0 = nil }
            throw error
        }
        let stopEarly = listenerState.withLock { state -> Bool in
            state.fd = listener.fd
            state.boundPath = listener.boundPath
            return state.stopping
        }
        statistics.setActivation(listener.activation)
        logger.info("ready", [
            "socket": .string(configuration.socketPath), "pid": .int(Int(getpid())),
            "activation": .string(listener.activation), "persistence": .string(configuration.persistence.modeName),
            "version": .string(definition.version),
        ])
        if !stopEarly { acceptLoop(listenFD: listener.fd) }
        finishShutdown(listener: listener)
    }

    /// Two services on one data directory would both write its files: the second is refused,
    /// naming the first. In-memory services have nothing to guard.
    private func lockDataDirectory() throws {
        guard case let .dataDirectory(directory) = configuration.persistence else { return }
        try PrivateDirectory.make(directory)
        let path = "\(directory)/\(Self.dataLockName)"
        let lock = try ProcessLock.acquire(path: path) { [definition] holder in
            "Another service (\(holder)) is using the data directory \(directory) (it holds \(path)); two must never share one. Stop it first, or choose another --data-dir for this \(definition.name)."
        }
        dataLock.withLock { $0 = lock }
    }

    /// The lock file inside a service's data directory.
    public static let dataLockName = "meowcare.lock"

    /// Begins a graceful stop. Safe from any thread, more than once.
    public func shutdown() {
        let first = listenerState.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        logger.info("shutting down: no new connections; finishing in-flight requests")
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    private func acceptLoop(listenFD: Int32) {
        var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
        while true {
            let n = poll(&fds, 2, -1)
            if n < 0 {
                if errno == EINTR { continue }
                logger.error("poll failed on the listener", ["errno": .int(Int(errno))])
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            let fd = meow_accept_cloexec(listenFD)
            if fd < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ECONNABORTED { continue }
                logger.warning("accept failed", ["errno": .int(Int(errno)), "reason": .string(String(cString: strerror(errno)))])
                if errno == EMFILE || errno == ENFILE { _ = poll(nil, 0, 50) }  // let descriptors free up
                continue
            }
            admit(fd: fd)
        }
    }

    /// The peer's supplementary groups as the kernel recorded them at connect (SO_PEERGROUPS).
    static func supplementaryGroups(_ fd: Int32) -> [UInt32] {
        var groups = [gid_t](repeating: 0, count: 1024)
        let count = meow_peer_groups(fd, &groups, Int32(groups.count))
        return count > 0 ? Array(groups[0..<Int(count)]) : []
    }

    private func admit(fd: Int32) {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        let peer = meow_peer_credentials(fd, &pid, &uid, &gid) == 0
            ? PeerCredentials(pid: pid, uid: uid, gid: gid) : PeerCredentials(pid: -1, uid: UInt32.max, gid: UInt32.max)
        _ = meow_set_send_timeout(fd, Int32(configuration.sendTimeoutMilliseconds))
        guard configuration.allows(uid: peer.uid, gid: peer.gid, groups: { Self.supplementaryGroups(fd) }) else {
            statistics.refused()
            logger.warning("refused a peer of another uid", ["peerUID": .int(Int(peer.uid)), "peerPID": .int(Int(peer.pid))])
            let groups = configuration.allowedGIDs.isEmpty ? "" : " or groups \(configuration.allowedGIDs.sorted().map(String.init).joined(separator: ", "))"
            reject(fd: fd, WireError(.peerNotAllowed, "This service accepts peers of uid \(getuid())\(groups) only; yours is \(peer.uid). Start it with --allow-uid \(peer.uid) (or --allow-group with one of your groups) to allow it.",
                                     details: ["uid": .int(Int(peer.uid))]))
            return
        }
        if let refusal = slots.take(pid: peer.pid) {
            statistics.refused()
            logger.warning("refused a connection: limit reached", ["reason": refusal.details["reason"] ?? .null,
                                                                   "limit": refusal.details["limit"] ?? .null, "peerPID": .int(Int(peer.pid))])
            reject(fd: fd, refusal)
            return
        }
        let id = statistics.accepted()
        let handle = ConnectionHandle(id: id, fd: fd, peer: peer, maxEventQueueBytes: configuration.maxEventQueueBytes)
        events.add(handle)
        logger.info("connection opened", ["connection": .int(id), "peerPID": .int(Int(peer.pid)), "peerUID": .int(Int(peer.uid))])
        connectionsDone.enter()
        let thread = Thread { [self] in
            let greeted = Connection(handle: handle, server: self).serve()
            slots.release(pid: peer.pid, greeted: greeted)
            events.remove(handle)
            definition.connectionClosed(handle)
            handle.flushEvents()
            handle.markBroken()
            handle.flushEvents()
            close(fd)
            logger.info("connection closed", ["connection": .int(id)])
            connectionsDone.leave()
        }
        thread.name = "connection-\(id)"
        // 4 MiB (reserved, touched only as used): a request nested to the parser's 512-level
        // limit recurses once per level in parsing, decoding and freeing the tree, and debug
        // builds' frames left 1 MiB with almost no margin.
        thread.stackSize = 4 << 20
        thread.start()
    }

    private func reject(fd: Int32, _ error: WireError) {
        if let body = try? JSONTextEncoder().bytes(ErrorReply(id: nil, error: error)) {
            _ = UnixSocket.writeAll(fd: fd, FrameEncoder.frame(body))
        }
        close(fd)
    }

    private func finishShutdown(listener: Listener) {
        close(listener.fd)
        if let path = listener.boundPath { unlink(path) }
        listener.lock?.release()
        events.publish(topic: EventHub.serviceTopic, event: "shuttingDown",
                       data: ["reason": "The service is stopping; reconnect once it is back."] as [String: String])
        // Ends each reader after its in-flight request: the request is answered, then EOF.
        for connection in events.all { Glibc.shutdown(connection.fd, Int32(SHUT_RD)) }
        if connectionsDone.wait(timeout: .now() + .milliseconds(configuration.shutdownGraceMilliseconds)) == .timedOut {
            logger.warning("connections still open after the grace period; closing anyway")
            for connection in events.all { connection.markBroken() }
            _ = connectionsDone.wait(timeout: .now() + .seconds(2))
        }
        definition.stop()
        // Only once the data is closed may another service take the directory.
        dataLock.withLock { $0?.release(); $0 = nil }
        logger.info("stopped")
    }
}

/// Counters for `info`.
final class ServerStatistics: Sendable {
    private struct Counts {
        var accepted = 0
        var refused = 0
        var activation = "self-bound"
        var opNames: [String] = []
    }
    private let counts = Mutex(Counts())
    let startedAt = Date()
    let socketPath: String

    init(socketPath: String) { self.socketPath = socketPath }

    func accepted() -> Int { counts.withLock { $0.accepted += 1; return $0.accepted } }
    func refused() { counts.withLock { $0.refused += 1 } }
    func setActivation(_ value: String) { counts.withLock { $0.activation = value } }
    func setOpNames(_ names: [String]) { counts.withLock { $0.opNames = names } }
    var opNames: [String] { counts.withLock { $0.opNames } }
    var snapshot: (accepted: Int, refused: Int, activation: String) {
        counts.withLock { ($0.accepted, $0.refused, $0.activation) }
    }
}
