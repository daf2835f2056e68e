#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The operating system's calls behind the client's Unix socket, in one place: Glibc on Linux,
/// Darwin on macOS (app teams run their tests on Macs). Everything above this file is the same
/// on both; what differs is how a socket is made close-on-exec, how SIGPIPE is avoided, and
/// sockaddr_un's layout.
///
/// ```swift
/// let fd = SystemSocket.openStream()
/// ```
public enum SystemSocket {
    /// A new Unix stream socket that children do not inherit and that never raises SIGPIPE;
    /// -1 with `errno` set on failure.
    public static func openStream() -> Int32 {
        #if canImport(Glibc)
        return socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        guard fd >= 0 else { return fd }
        // Darwin has neither SOCK_CLOEXEC nor MSG_NOSIGNAL: set both properties on the socket.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        return fd
        #endif
    }

    /// An empty sockaddr_un for the Unix family (Darwin also wants its length byte).
    public static func emptyAddress() -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        #if canImport(Darwin)
        address.sun_len = UInt8(MemoryLayout<sockaddr_un>.size)
        #endif
        return address
    }

    /// connect(2) to a Unix address; 0 or -1 with `errno` set.
    public static func connect(_ fd: Int32, to address: sockaddr_un) -> Int32 {
        var address = address
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Glibc)
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                #else
                Darwin.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                #endif
            }
        }
    }

    /// send(2) without SIGPIPE: a peer that went away is an error, not a signal.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        return Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
        #else
        return Darwin.send(fd, bytes, count, 0)
        #endif
    }

    /// send(2) that never blocks: -1 with `errno` EAGAIN when the socket's buffer is full.
    public static func sendAvailable(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        return Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        #else
        return Darwin.send(fd, bytes, count, MSG_DONTWAIT)
        #endif
    }

    /// recv(2): the bytes read, 0 at EOF, -1 with `errno` set.
    public static func receive(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        recv(fd, buffer, count, 0)
    }

    /// Ends both directions at once: a reader blocked in `receive` on another thread wakes with EOF.
    public static func shutdownBoth(_ fd: Int32) {
        #if canImport(Glibc)
        _ = shutdown(fd, Int32(SHUT_RDWR))
        #else
        _ = shutdown(fd, SHUT_RDWR)
        #endif
    }

    public static func close(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    /// poll(2) for readability; the poll's result (1 readable, 0 timed out, -1 with `errno`).
    public static func pollReadable(_ fd: Int32, timeoutMilliseconds: Int32) -> Int32 {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, timeoutMilliseconds)
    }

    /// The calling thread's last error number.
    public static var lastError: Int32 { errno }

    /// The system's text for an error number.
    public static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
