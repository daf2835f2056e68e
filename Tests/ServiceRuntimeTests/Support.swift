#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
@testable import ServiceRuntime
import Synchronization
import TestSupport

/// What a `TestService` was asked to do, in order.
final class Calls: Sendable {
    private let names = Mutex([String]())
    func add(_ name: String) { names.withLock { $0.append(name) } }
    var all: [String] { names.withLock { $0 } }
}

struct NameParams: Codable, Sendable { var name: String }
struct Item: Codable, Sendable { var name: String; var count: Int }
struct ItemsParams: Codable, Sendable { var items: [Item] }
struct FailParams: Codable, Sendable { var kind: String }
struct OptionalParams: Codable, Sendable { var note: String? }

/// Params that read themselves from their bytes (their one reader), and say they were.
struct ScannedParams: Decodable, Sendable, JSONReadable {
    var value: String
    var viaReader = false

    init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }

    init(reading reader: inout MessageReader) throws(MessageReadError) {
        var value: String?
        try reader.object { (key, reader) throws(MessageReadError) in
            guard key == "value" else { return try reader.skip() }
            value = try reader.string()
        }
        guard let value else { throw reader.missing("value") }
        self.value = value
        viaReader = true
    }
}

/// A result that writes its own text, and says which way it went out: its `Encodable` form
/// says "encoder", its writer "writer".
struct WrittenResult: Encodable, Sendable, JSONTextWritable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(["via": "encoder"])
    }

    func writeJSON(to out: inout String) -> Bool {
        out += #"{"via":"writer"}"#
        return true
    }
}

/// A generic wrapper that registers through the plain overload whatever its result is: it
/// hides `WrittenResult`'s writer from the registry (the registry's debug assertion stops it).
func registerHidingWriter() {
    func wrapped<R: Encodable & Sendable>(_ result: R, in registry: inout OperationRegistry) {
        registry.register("test.hidden", params: Empty.self) { _, _ in result }
    }
    var registry = OperationRegistry()
    wrapped(WrittenResult(), in: &registry)
}

/// The same for params: `ScannedParams`'s reader hidden behind a generic wrapper.
func registerHidingReader() {
    func wrapped<P: Decodable & Sendable>(_ params: P.Type, in registry: inout OperationRegistry) {
        registry.register("test.hidden", params: params) { _, _ in ["ok": true] }
    }
    var registry = OperationRegistry()
    wrapped(ScannedParams.self, in: &registry)
}

/// A made-up error a handler throws that is neither a WireError nor a ServiceError.
struct Unmapped: Error {}

/// A small service for the runtime to run: a few ops of each access level, credentials
/// `user-secret` (alice) and `admin-secret` (the admin), a health check that can fail.
struct TestService: ServiceDefinition {
    let name = "test-service"
    let version = "9.9.9"
    var topics: [String] { ["things"] }
    let calls = Calls()
    var failStart = false
    var healthy = true

    func start(events: EventHub) throws {
        calls.add("start")
        if failStart { throw StartupError("the test service refuses to start") }
    }

    func registerOperations(in registry: inout OperationRegistry) {
        registry.register("test.echoName", params: NameParams.self) { params, _ in params }
        registry.register("test.items", params: ItemsParams.self) { params, _ in ["count": params.items.count] }
        registry.register("test.optional", params: OptionalParams.self) { params, _ in
            ["note": params.note.map { JSONValue.string($0) } ?? .null]
        }
        registry.register("test.whoami", params: Empty.self, access: .authenticated) { _, context in
            ["user": JSONValue.string(context.connection.principal?.user ?? "")]
        }
        registry.register("test.admin", params: Empty.self, access: .admin) { _, _ in ["admin": true] }
        registry.register("test.fail", params: FailParams.self) { params, _ -> [String: Bool] in
            switch params.kind {
            case "wire": throw WireError(.invalidArguments, "wire failure", details: ["why": "test"])
            case "service": throw ServiceError(.limitExceeded, "service failure")
            default: throw Unmapped()
            }
        }
        registry.register("test.origin", params: Empty.self) { _, context in
            ["origin": JSONValue.int(RequestOrigin.current ?? -1), "connection": .int(context.connection.id)]
        }
        registry.register("test.scanned", params: ScannedParams.self) { params, _ in
            ["value": JSONValue.string(params.value), "viaReader": .bool(params.viaReader)]
        }
        registry.register("test.written", params: Empty.self) { _, _ in WrittenResult() }
    }

    func authenticate(credential: String?, connection: ConnectionHandle) throws -> Principal? {
        switch credential {
        case nil: return nil
        case "user-secret": return Principal(user: "alice")
        case "admin-secret": return Principal(user: "_admin", isAdmin: true)
        default: throw WireError(.notAuthenticated, "No user has that credential.")
        }
    }

    func healthChecks() -> [HealthCheck] {
        [HealthCheck(name: "database", ok: healthy, detail: healthy ? "open" : "closed")]
    }

    func infoDetails() -> [String: JSONValue] {
        ["persistence": ["files": ["test.sqlite"]], "extra": 42]
    }

    func stop() { calls.add("stop") }
}

/// A client end of a Unix stream socket: frames out, frames in with a deadline, EOF seen.
final class TestClient: @unchecked Sendable {
    // @unchecked: each test uses its client from one task at a time.
    let fd: Int32
    private var decoder = FrameDecoder(maxFrameBytes: 1 << 30)
    private(set) var sawEOF = false

    init(fd: Int32) { self.fd = fd }
    convenience init(path: String) throws { self.init(fd: try UnixSocket.connect(path: path)) }
    deinit { close(fd) }

    func send(_ json: String) { sendBody(Array(json.utf8)) }
    func sendBody(_ body: [UInt8]) { sendRaw(FrameEncoder.frame(body)) }
    func sendRaw(_ bytes: [UInt8]) { _ = UnixSocket.writeAll(fd: fd, bytes) }

    /// The next frame, or nil at EOF or when nothing came within `timeout` (a failure guard,
    /// not a synchronisation: every test waits for a frame it knows is coming).
    func frame(timeout: Int32 = 10_000) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let frame = try? decoder.nextFrame() { return frame }
            guard UnixSocket.waitReadable(fd: fd, timeoutMilliseconds: timeout) else { return nil }
            let n = buffer.withUnsafeMutableBytes { UnixSocket.read(fd: fd, into: $0) }
            if n <= 0 { sawEOF = true; return nil }
            decoder.append(buffer[0..<n])
        }
    }

    func next() throws -> JSONValue {
        guard let body = frame() else { throw TestFailure(sawEOF ? "the connection was closed" : "no frame within 10 s") }
        return try JSONParser.parse(body)
    }

    /// Sends one request and returns the next message (the tests' services send no events unasked).
    func call(_ json: String) throws -> JSONValue {
        send(json)
        return try next()
    }

    @discardableResult
    func hello(credential: String? = nil, id: Int = 1) throws -> JSONValue {
        let credentialMember = credential.map { #","credential":"\#($0)""# } ?? ""
        return try call(#"{"id":\#(id),"op":"hello","params":{"minVersion":1,"maxVersion":1,"client":"unit-test"\#(credentialMember)}}"#)
    }

    /// True when the peer closes the connection with no further frame.
    func closesWithoutFrame() -> Bool { frame() == nil && sawEOF }
}

/// A connection served by the runtime's `Connection` on one end of a socket pair, the test's
/// client on the other: the whole request path without a listener.
final class ServedConnection: Sendable {
    let server: ServiceServer
    let handle: ConnectionHandle
    let client: TestClient
    private let finished: ThreadResult<Bool>

    init(_ definition: TestService = TestService(), id: Int = 1,
         configure: (inout ServiceConfiguration) -> Void = { _ in }) throws {
        var configuration = ServiceConfiguration(socketPath: "/nonexistent/unit.sock", persistence: .inMemory)
        configure(&configuration)
        server = try ServiceServer(definition: definition, configuration: configuration)
        let (serverEnd, clientEnd) = try socketPair()
        handle = ConnectionHandle(id: id, fd: serverEnd, peer: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()),
                                  maxEventQueueBytes: configuration.maxEventQueueBytes)
        client = TestClient(fd: clientEnd)
        let (server, handle) = (server, handle)
        finished = ThreadResult { Connection(handle: handle, server: server).serve() }
    }

    private let serverEndClosed = Mutex(false)

    /// Ends the client's side and waits for the connection's thread; returns whether it said hello.
    func end() async -> Bool {
        shutdown(client.fd, Int32(SHUT_WR))
        return await served()
    }

    /// Waits for the connection's thread to end, then closes the service's end as the server
    /// does (the client then reads EOF); returns whether the connection said hello.
    func served() async -> Bool {
        let greeted = await finished.value()
        if serverEndClosed.withLock({ closed in defer { closed = true }; return !closed }) { close(handle.fd) }
        return greeted
    }
}

/// Work on a thread of its own, started at once, and its result awaited without holding a
/// thread of Swift's cooperative pool (the tests block pool threads while they wait for replies;
/// what they wait for must never need one).
final class ThreadResult<T: Sendable>: Sendable {
    private struct State {
        var result: T?
        var waiter: CheckedContinuation<T, Never>?
    }
    private let state = Mutex(State())

    init(_ work: @escaping @Sendable () -> T) {
        let thread = Thread { [self] in
            let result = work()
            let waiter = self.state.withLock { state -> CheckedContinuation<T, Never>? in
                state.result = result
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: result)
        }
        thread.stackSize = 4 << 20  // as the server gives a connection's thread
        thread.start()
    }

    func value() async -> T {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> T? in
                if state.result == nil { state.waiter = continuation }
                return state.result
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Two connected Unix stream sockets.
func socketPair() throws -> (Int32, Int32) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw TestFailure("socketpair: \(String(cString: strerror(errno)))")
    }
    return (fds[0], fds[1])
}

/// A file's mode bits (permissions only), or nil when it does not exist.
func mode(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

func isSocket(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
}

/// Binds a listening socket at `path` by hand (no lock file, as another program would).
func bindRawSocket(_ path: String, listening: Bool) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = try UnixSocket.makeAddress(path: path)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0, !listening || listen(fd, 8) == 0 else {
        close(fd)
        throw TestFailure("bind/listen \(path): \(String(cString: strerror(errno)))")
    }
    return fd
}

/// Blocks until a listening socket accepts connections at `path`: inotify reports the socket
/// file's creation (bind), then the few instructions to listen() are waited out by yielding.
/// No sleep: every wait ends on the event it waits for (10 s is only a failure guard).
func waitUntilAccepting(_ path: String) throws -> TestClient {
    let slash = path.lastIndex(of: "/")!
    let directory = String(path[..<slash])
    let watch = inotify_init1(Int32(IN_CLOEXEC))
    guard watch >= 0 else { throw TestFailure("inotify_init1: \(String(cString: strerror(errno)))") }
    defer { close(watch) }
    guard inotify_add_watch(watch, directory, UInt32(IN_CREATE)) >= 0 else {
        throw TestFailure("inotify_add_watch \(directory): \(String(cString: strerror(errno)))")
    }
    let deadline = ContinuousClock.now + .seconds(10)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while !isSocket(path) {
        guard ContinuousClock.now < deadline, UnixSocket.waitReadable(fd: watch, timeoutMilliseconds: 10_000) else {
            throw TestFailure("no socket appeared at \(path)")
        }
        _ = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
    }
    while true {
        if let fd = try? UnixSocket.connect(path: path) { return TestClient(fd: fd) }
        guard ContinuousClock.now < deadline else { throw TestFailure("\(path) never accepted a connection") }
        sched_yield()
    }
}
