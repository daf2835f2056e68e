#if canImport(Glibc)
import Glibc
#endif
import MeowWire

/// The options every service shares: where it listens, where its data lives, and its limits.
public struct ServiceConfiguration: Sendable {
    public enum Persistence: Sendable, Equatable {
        case dataDirectory(String)
        case inMemory
        public var modeName: String { self == .inMemory ? "inMemory" : "sqlite" }
    }

    public var socketPath: String
    public var persistence: Persistence
    public var maxFrameBytes = WireLimits.defaultMaxFrameBytes
    public var maxConnections = 256
    /// A client that does not take a frame within this time is disconnected.
    public var sendTimeoutMilliseconds = 10_000
    /// A frame not finished within this time of its first byte closes the connection (truncatedFrame).
    public var frameTimeoutMilliseconds = 30_000
    /// A connection that has not completed hello within this time of its accept is closed (helloTimeout).
    public var helloTimeoutMilliseconds = 10_000
    /// Connections one peer process (by SO_PEERCRED pid) may hold at once.
    public var maxConnectionsPerPeer = 32
    /// Connections that have not completed hello yet, across all peers: the rest of
    /// `maxConnections` stays for connections that did.
    public var maxPendingConnections = 64
    /// Bytes of unfinished frames buffered across all connections; a frame that would go past
    /// it is refused (bufferBudgetExceeded) and its connection closed.
    public var maxBufferedBytes = 128 * 1024 * 1024
    /// Events queued for one slow reader beyond this are dropped and replaced by `resyncRequired`.
    public var maxEventQueueBytes = 8 * 1024 * 1024
    /// Peer uids allowed besides the service's own; nil allows any uid.
    public var allowedUIDs: Set<UInt32>? = []
    /// Groups whose members are accepted too (the peer's primary or a supplementary group):
    /// services of a deployment run as different users sharing one group.
    public var allowedGIDs: Set<UInt32> = []
    /// With a directory, files named in requests (snapshots) must lie inside it, for every peer;
    /// without one, only peers of the service's own uid (or root) may name files.
    public var snapshotDirectory: String?
    /// The largest snapshot file a service reads (`limitExceeded` past it, before reading).
    public var maxSnapshotBytes = 512 * 1024 * 1024
    /// How long shutdown waits for in-flight requests before closing anyway.
    public var shutdownGraceMilliseconds = 10_000

    public init(socketPath: String, persistence: Persistence) {
        self.socketPath = socketPath
        self.persistence = persistence
    }

    /// The options above, for a service's command-line parser.
    public static let commandLineOptions: [CommandLineParser.Option] = [
        .init("config", value: "FILE", help: "Read options from FILE: one 'name = value' (or a bare flag name) per line; a line whose first non-blank character is # is a comment (a # elsewhere is part of the value). The command line wins."),
        .init("socket", value: "PATH", help: "Unix socket to listen on (directory created 0700; socket 0600). Ignored under systemd socket activation."),
        .init("data-dir", value: "DIR", help: "Keep data in SQLite files under DIR (created 0700 if missing). DIR/meowcare.lock keeps a second service off it while this one runs."),
        .init("in-memory", help: "Keep everything in memory; nothing is written to disk (tests)."),
        .init("max-frame-bytes", value: "N", help: "Largest frame accepted, in bytes (default 16777216)."),
        .init("max-connections", value: "N", help: "Connections served at once; more are refused with tooManyConnections (default 256)."),
        .init("send-timeout-ms", value: "MS", help: "Disconnect a client that does not read a frame within MS (default 10000)."),
        .init("frame-timeout-ms", value: "MS", help: "Close a connection whose frame is not complete MS after its first byte (default 30000)."),
        .init("hello-timeout-ms", value: "MS", help: "Close a connection that has not completed hello MS after it was accepted, with helloTimeout (default 10000)."),
        .init("max-connections-per-peer", value: "N", help: "Connections one peer process (SO_PEERCRED pid) may hold; more are refused with tooManyConnections (default 32)."),
        .init("max-pending-connections", value: "N", help: "Connections not yet past hello, across all peers; more are refused with tooManyConnections (default 64)."),
        .init("max-buffered-bytes", value: "N", help: "Bytes of unfinished frames buffered across all connections; a frame past it is refused with bufferBudgetExceeded (default 134217728)."),
        .init("max-event-queue-bytes", value: "N", help: "Events buffered for a slow reader before resyncRequired (default 8388608)."),
        .init("allow-uid", value: "UID", help: "Also accept peers with this uid (repeatable). By default only the service's own uid.", repeatable: true),
        .init("allow-group", value: "GROUP", help: "Also accept peers in this group, by name or gid (their primary or a supplementary group; repeatable).", repeatable: true),
        .init("allow-any-uid", help: "Accept peers of any uid (SO_PEERCRED is still logged)."),
        .init("snapshot-dir", value: "DIR", help: "Snapshot files named in requests must lie inside DIR (no symbolic link may lead out); a path elsewhere is refused with permissionFailure. Without it only the service's own uid (or root) may name files."),
        .init("max-snapshot-bytes", value: "N", help: "Largest snapshot file read on import, in bytes; a larger one is refused with limitExceeded before it is read (default 536870912)."),
        .init("log-level", value: "LEVEL", help: "trace, debug, info (default), notice, warning or error."),
        .init("help", help: "Show this help and exit."),
        .init("version", help: "Print the version and exit."),
    ]

    /// Reads the shared options. `defaultSocket` is used when --socket is absent.
    public static func from(_ options: ParsedOptions, defaultSocket: String) throws(UsageError) -> ServiceConfiguration {
        let dataDir = options.value("data-dir")
        let inMemory = options.has("in-memory")
        let persistence: Persistence
        switch (dataDir, inMemory) {
        case (nil, true): persistence = .inMemory
        case let (dir?, false): persistence = .dataDirectory(dir)
        case (_?, true): throw UsageError("Choose one of --data-dir DIR and --in-memory, not both.")
        case (nil, false): throw UsageError("Pass --data-dir DIR to keep data in SQLite files, or --in-memory for a throwaway instance.")
        }
        var configuration = ServiceConfiguration(socketPath: options.value("socket") ?? defaultSocket, persistence: persistence)
        configuration.maxFrameBytes = try options.int("max-frame-bytes", default: configuration.maxFrameBytes, range: 64...(1 << 30))
        configuration.maxConnections = try options.int("max-connections", default: configuration.maxConnections, range: 1...65536)
        configuration.sendTimeoutMilliseconds = try options.int("send-timeout-ms", default: configuration.sendTimeoutMilliseconds, range: 1...3_600_000)
        configuration.frameTimeoutMilliseconds = try options.int("frame-timeout-ms", default: configuration.frameTimeoutMilliseconds, range: 1...3_600_000)
        configuration.helloTimeoutMilliseconds = try options.int("hello-timeout-ms", default: configuration.helloTimeoutMilliseconds, range: 1...3_600_000)
        configuration.maxConnectionsPerPeer = try options.int("max-connections-per-peer", default: configuration.maxConnectionsPerPeer, range: 1...65536)
        configuration.maxPendingConnections = try options.int("max-pending-connections", default: configuration.maxPendingConnections, range: 1...65536)
        configuration.maxBufferedBytes = try options.int("max-buffered-bytes", default: configuration.maxBufferedBytes, range: (64 * 1024)...(1 << 40))
        configuration.maxEventQueueBytes = try options.int("max-event-queue-bytes", default: configuration.maxEventQueueBytes, range: 1024...(1 << 31))
        configuration.maxSnapshotBytes = try options.int("max-snapshot-bytes", default: configuration.maxSnapshotBytes, range: 1...(1 << 40))
        if let directory = options.value("snapshot-dir") {
            guard directory.hasPrefix("/") else { throw UsageError("--snapshot-dir must be an absolute path; got '\(directory)'.") }
            configuration.snapshotDirectory = directory
        }
        if options.has("allow-any-uid") {
            configuration.allowedUIDs = nil
        } else {
            var uids: Set<UInt32> = []
            for text in options.all("allow-uid") {
                guard let uid = UInt32(text) else { throw UsageError("--allow-uid must be a numeric uid; got '\(text)'.") }
                uids.insert(uid)
            }
            configuration.allowedUIDs = uids
        }
        for text in options.all("allow-group") {
            guard let gid = UInt32(text) ?? Self.groupID(named: text) else {
                throw UsageError("--allow-group: no group named '\(text)' (give a group name from /etc/group or a numeric gid).")
            }
            configuration.allowedGIDs.insert(gid)
        }
        if let level = options.value("log-level") {
            guard let parsed = Logger.Level(name: level) else {
                throw UsageError("--log-level must be one of \(Logger.Level.allCases.map(\.name).joined(separator: ", ")); got '\(level)'.")
            }
            Logger.minimumLevel = parsed
        }
        return configuration
    }

    /// Whether a peer of `uid` may connect: the service's own uid always may.
    public func allows(uid: UInt32) -> Bool {
        guard let allowedUIDs else { return true }
        return uid == getuid() || allowedUIDs.contains(uid)
    }

    /// Whether a peer may connect by its uid, or by one of its groups (`groups()` is asked only
    /// when the uid alone does not decide it).
    public func allows(uid: UInt32, gid: UInt32, groups: () -> [UInt32]) -> Bool {
        if allows(uid: uid) { return true }
        guard !allowedGIDs.isEmpty else { return false }
        return allowedGIDs.contains(gid) || groups().contains { allowedGIDs.contains($0) }
    }

    static func groupID(named name: String) -> UInt32? {
        var group = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        guard getgrnam_r(name, &group, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return group.gr_gid
    }

    /// A per-user default socket path: $XDG_RUNTIME_DIR/meowcare/NAME.sock, else /tmp/meowcare-UID/NAME.sock.
    public static func defaultSocketPath(for service: String) -> String {
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty {
            return "\(runtime)/meowcare/\(service).sock"
        }
        return "/tmp/meowcare-\(getuid())/\(service).sock"
    }
}
