#if canImport(Glibc)
import Glibc
#endif
import CShim
import MeowWire

/// The listening socket: one systemd passed (socket activation), or one bound here.
struct Listener {
    let fd: Int32
    /// The path this process bound and must remove at exit; nil under socket activation.
    let boundPath: String?
    /// The lock on `boundPath` + ".lock", released after the socket file is removed.
    let lock: ProcessLock?
    let activation: String

    /// Prefers a socket from systemd (LISTEN_PID/LISTEN_FDS, fd 3); otherwise binds `path`.
    static func open(path: String, logger: Logger) throws -> Listener {
        let passed = meow_listen_fds()
        if passed > 0 {
            guard meow_is_unix_listener(3) == 1 else {
                throw StartupError("systemd passed \(passed) socket(s) but fd 3 is not a listening Unix stream socket. Check the .socket unit (ListenStream=).")
            }
            logger.info("using the socket systemd passed", ["fd": 3, "fds": .int(Int(passed))])
            return Listener(fd: 3, boundPath: nil, lock: nil, activation: "systemd")
        }
        let (fd, lock) = try bind(path: path, logger: logger)
        return Listener(fd: fd, boundPath: path, lock: lock, activation: "self-bound")
    }

    private static func bind(path: String, logger: Logger) throws -> (Int32, ProcessLock) {
        try makePrivateDirectory(parentOf: path, logger: logger)
        // Held while the socket is served: two services started at once on one path would both
        // see a stale (or no) socket, and the second would unlink the first's live socket.
        let lock = try ProcessLock.acquire(path: path + ".lock") { holder in
            "Another service (\(holder)) is already listening on \(path), or starting to (it holds \(path).lock). Stop it first, or choose another --socket."
        }
        do {
            return (try bindLocked(path: path, logger: logger), lock)
        } catch {
            lock.release()
            throw error
        }
    }

    private static func bindLocked(path: String, logger: Logger) throws -> Int32 {
        try clearStaleSocket(at: path, logger: logger)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StartupError("socket(): \(String(cString: strerror(errno)))") }
        var address: sockaddr_un
        do { address = try UnixSocket.makeAddress(path: path) } catch { close(fd); throw StartupError(error.message) }
        // The socket file takes its mode from the umask at bind time: 0600 with no window.
        let previousMask = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        let bindErrno = errno
        umask(previousMask)
        guard bound == 0 else {
            close(fd)
            throw StartupError("Could not bind \(path): \(String(cString: strerror(bindErrno))).")
        }
        guard listen(fd, 512) == 0 else {
            close(fd)
            throw StartupError("Could not listen on \(path): \(String(cString: strerror(errno))).")
        }
        return fd
    }

    /// Creates the socket's directory (and missing parents) with mode 0700.
    private static func makePrivateDirectory(parentOf path: String, logger: Logger) throws {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        guard !directory.isEmpty else { return }
        try PrivateDirectory.make(directory) { created in
            logger.info("created socket directory", ["path": .string(created), "mode": "0700"])
        }
        var info = stat()
        if stat(directory, &info) == 0, info.st_mode & 0o022 != 0 {
            logger.warning("the socket directory is writable by others; prefer a 0700 directory", ["path": .string(directory)])
        }
    }

    /// Replaces a socket file only when nothing answers on it; refuses a live one or a non-socket.
    private static func clearStaleSocket(at path: String, logger: Logger) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw StartupError("\(path) exists and is not a socket; refusing to replace it. Remove it or choose another --socket.")
        }
        do {
            let fd = try UnixSocket.connect(path: path)
            close(fd)
            throw StartupError("Another service is already listening on \(path). Stop it first, or choose another --socket.")
        } catch let error as WireError {
            guard case .int(Int(ECONNREFUSED)) = error.details["errno"] ?? .null else {
                throw StartupError("Could not check the existing socket \(path): \(error.message)")
            }
        }
        guard unlink(path) == 0 else {
            throw StartupError("Could not remove the stale socket \(path): \(String(cString: strerror(errno))).")
        }
        logger.notice("replaced a stale socket file (nothing answered on it)", ["socket": .string(path)])
    }
}

/// Start-up failed: the message says what to do. The process exits with status 1.
public struct StartupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
