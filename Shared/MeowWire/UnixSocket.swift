#if canImport(Glibc)
import Glibc
#endif
import CShim

/// Thin, blocking helpers over a Unix stream socket file descriptor. EINTR is retried, partial
/// writes are continued, and SIGPIPE is never raised (MSG_NOSIGNAL).
public enum UnixSocket {
    /// Connects to the socket at `path`; returns the file descriptor.
    public static func connect(path: String) throws(WireError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw systemError("socket", path: path) }
        var address = try makeAddress(path: path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result != 0 {
            let error = systemError("connect", path: path)
            close(fd)
            throw error
        }
        return fd
    }

    /// A sockaddr_un for `path`, refusing paths longer than sun_path holds (107 bytes).
    public static func makeAddress(path: String) throws(WireError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw WireError(.invalidArguments,
                            "Socket path '\(path)' is \(bytes.count) bytes; a Unix socket path must be 1 to \(capacity - 1) bytes. Use a shorter path.")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
            raw[bytes.count] = 0
        }
        return address
    }

    /// Writes every byte or throws. Returns false when the send timed out (SO_SNDTIMEO).
    public static func writeAll(fd: Int32, _ bytes: UnsafeRawBufferPointer) -> WriteOutcome {
        var offset = 0
        while offset < bytes.count {
            let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .timedOut }
            return .closed
        }
        return .written
    }

    public static func writeAll(fd: Int32, _ bytes: [UInt8]) -> WriteOutcome {
        bytes.withUnsafeBytes { writeAll(fd: fd, $0) }
    }

    public enum WriteOutcome: Sendable { case written, timedOut, closed }

    /// Reads what is available (blocking); 0 on EOF, -1 on error (EINTR retried).
    public static func read(fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Waits until fd is readable or the timeout passes (milliseconds; -1 waits forever).
    public static func waitReadable(fd: Int32, timeoutMilliseconds: Int32) -> Bool {
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let n = poll(&pollfd, 1, timeoutMilliseconds)
            if n < 0 && errno == EINTR { continue }
            return n > 0
        }
    }

    static func systemError(_ call: String, path: String) -> WireError {
        let code = errno
        let reason = String(cString: strerror(code))
        var hint = ""
        if code == ENOENT { hint = " Is the service running? Start it with --socket \(path)." }
        if code == ECONNREFUSED { hint = " Nothing is listening there (a stale socket file?)." }
        return WireError(.networkUnavailable, "\(call) \(path): \(reason).\(hint)",
                         details: ["errno": .int(Int(code)), "path": .string(path)])
    }
}
