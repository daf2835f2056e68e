#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on a file, held until the process exits (the descriptor is never closed;
/// the kernel drops the lock when the process ends, however it ends). The holder writes its pid
/// into the file, so whoever fails to take the lock can name it.
///
/// ```swift
/// try ProcessLock.acquire(path: "\(dataDir)/meowcare.lock") { holder in
///     "Another service (\(holder)) uses \(dataDir)."
/// }
/// ```
enum ProcessLock {
    /// Takes the lock or throws a StartupError whose message `refusal` writes from the holder's
    /// description ("pid 1234", or "pid unknown" while the holder has not written it yet).
    /// The file is left in place at exit: removing it would let a waiting process lock an
    /// unlinked file while a third creates a new one.
    @discardableResult
    static func acquire(path: String, refusal: (String) -> String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw StartupError("Could not open the lock file \(path): \(String(cString: strerror(errno))).")
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let reason = errno
            let holder = holderDescription(fd: fd)
            close(fd)
            if reason == EWOULDBLOCK { throw StartupError(refusal(holder)) }
            throw StartupError("Could not lock \(path): \(String(cString: strerror(reason))).")
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    /// "pid N" from the lock file's text, or "pid unknown".
    private static func holderDescription(fd: Int32) -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return "pid unknown" }
        let text = String(decoding: bytes[0..<n], as: UTF8.self).trimmingWhitespace
        guard let pid = Int32(text), pid > 0 else { return "pid unknown" }
        return "pid \(pid)"
    }
}

/// Creates a directory and its missing parents, each with mode 0700.
enum PrivateDirectory {
    static func make(_ directory: String, created: (String) -> Void = { _ in }) throws {
        var current = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            current += "/" + component
            var info = stat()
            if stat(current, &info) == 0 { continue }
            guard mkdir(current, 0o700) == 0 || errno == EEXIST else {
                throw StartupError("Could not create the directory \(current): \(String(cString: strerror(errno))).")
            }
            created(current)
        }
    }
}

extension String {
    var trimmingWhitespace: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
