#if canImport(Glibc)
import Glibc
#endif
import CShim

/// An exclusive POSIX record lock (fcntl) on a file, held until the process exits: the
/// descriptor is never closed, and the kernel drops the lock when the process ends, however it
/// ends. Whoever fails to take it learns the holder's pid from the kernel (F_GETLK), so the
/// refusal can name it; the holder also writes its pid into the file for people.
///
/// ```swift
/// try ProcessLock.acquire(path: "\(dataDir)/meowcare.lock") { holder in
///     "Another service (\(holder)) uses \(dataDir)."
/// }
/// ```
enum ProcessLock {
    /// Takes the lock or throws a StartupError whose message `refusal` writes from the holder's
    /// description ("pid 1234"). The file is left in place at exit: removing it would let a
    /// waiting process lock an unlinked file while a third creates a new one.
    @discardableResult
    static func acquire(path: String, refusal: (String) -> String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw StartupError("Could not open the lock file \(path): \(String(cString: strerror(errno))).")
        }
        while meow_lock_file(fd) != 0 {
            if errno == EINTR { continue }
            let reason = errno
            let holder = meow_lock_holder(fd)
            close(fd)
            if reason == EAGAIN || reason == EACCES {
                throw StartupError(refusal(holder > 0 ? "pid \(holder)" : "pid unknown"))
            }
            throw StartupError("Could not lock \(path): \(String(cString: strerror(reason))).")
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
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
