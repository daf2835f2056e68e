#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin, blocking helpers over a Unix stream socket file descriptor. EINTR is retried, partial
/// writes are continued, and SIGPIPE is never raised. The system calls are `SystemSocket`'s.
public enum UnixSocket {
    /// Connects to the socket at `path`; returns the file descriptor.
    public static func connect(path: String) throws(WireError) -> Int32 {
        let fd = SystemSocket.openStream()
        guard fd >= 0 else { throw systemError("socket", path: path) }
        let address = try makeAddress(path: path)
        if SystemSocket.connect(fd, to: address) != 0 {
            let error = systemError("connect", path: path)
            SystemSocket.close(fd)
            throw error
        }
        return fd
    }

    /// A sockaddr_un for `path`, refusing paths longer than sun_path holds (107 bytes).
    public static func makeAddress(path: String) throws(WireError) -> sockaddr_un {
        var address = SystemSocket.emptyAddress()
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
            let n = SystemSocket.send(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .timedOut }
            return .closed
        }
        return .written
    }

    /// Writes what the socket takes without blocking: the number of bytes written (0 when its
    /// buffer is full), or -1 when the connection is closed.
    public static func writeAvailable(fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            let n = SystemSocket.sendAvailable(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            return -1
        }
        return offset
    }

    public static func writeAll(fd: Int32, _ bytes: [UInt8]) -> WriteOutcome {
        bytes.withUnsafeBytes { writeAll(fd: fd, $0) }
    }

    public enum WriteOutcome: Sendable { case written, timedOut, closed }

    /// Reads what is available (blocking); 0 on EOF, -1 on error (EINTR retried).
    public static func read(fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = SystemSocket.receive(fd, buffer.baseAddress, buffer.count)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Waits until fd is readable or the timeout passes (milliseconds; -1 waits forever).
    public static func waitReadable(fd: Int32, timeoutMilliseconds: Int32) -> Bool {
        while true {
            let n = SystemSocket.pollReadable(fd, timeoutMilliseconds: timeoutMilliseconds)
            if n < 0 && errno == EINTR { continue }
            return n > 0
        }
    }

    static func systemError(_ call: String, path: String) -> WireError {
        let code = SystemSocket.lastError
        let reason = SystemSocket.describe(code)
        var hint = ""
        if code == ENOENT { hint = " Is the service running? Start it with --socket \(path)." }
        if code == ECONNREFUSED { hint = " Nothing is listening there (a stale socket file?)." }
        return WireError(.networkUnavailable, "\(call) \(path): \(reason).\(hint)",
                         details: ["errno": .int(Int(code)), "path": .string(path)])
    }
}
