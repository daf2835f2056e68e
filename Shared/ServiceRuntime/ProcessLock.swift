#if canImport(Glibc)
import Glibc
#endif
import CShim

/// An exclusive POSIX record lock (fcntl) on a file, held until `release()` or the process's
/// end (the kernel drops it however the process ends). Whoever fails to take it learns the
/// holder's pid from the kernel (F_GETLK), so the refusal can name it; the holder also writes
/// its pid into the file for people.
///
/// ```swift
/// let lock = try ProcessLock.acquire(path: "\(dataDir)/meowcare.lock") { holder in
///     "Another service (\(holder)) uses \(dataDir)."
/// }
/// defer { lock.release() }
/// ```
struct ProcessLock: Sendable {
    let path: String
    let fd: Int32

    /// Takes the lock or throws a StartupError whose message `refusal` writes from the holder's
    /// description ("pid 1234").
    static func acquire(path: String, refusal: (String) -> String) throws -> ProcessLock {
        while true {
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
            // A holder that stopped removed the file between our open and our lock: the lock is
            // on a file no longer at the path, so take the one there now.
            guard isStillAtPath(fd: fd, path: path) else { close(fd); continue }
            let text = Array("\(getpid())\n".utf8)
            _ = ftruncate(fd, 0)
            _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            return ProcessLock(path: path, fd: fd)
        }
    }

    /// Removes the file, then lets go. Removing first means a process that opened the file
    /// meanwhile finds it gone from the path once it has the lock, and starts over.
    func release() {
        unlink(path)
        close(fd)
    }

    private static func isStillAtPath(fd: Int32, path: String) -> Bool {
        var opened = stat()
        var named = stat()
        return fstat(fd, &opened) == 0 && lstat(path, &named) == 0 && opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
    }
}

/// Creates a directory and its missing parents, each with mode 0700.
public enum PrivateDirectory {
    public static func make(_ directory: String, created: (String) -> Void = { _ in }) throws(StartupError) {
        var current = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            // String + String: the generic Substring append looked its types up by name at
            // first use, a tenth of a millisecond of each start.
            current += "/" + String(component)
            var info = stat()
            if stat(current, &info) == 0 { continue }
            guard mkdir(current, 0o700) == 0 || errno == EEXIST else {
                throw StartupError("Could not create the directory \(current): \(String(cString: strerror(errno))).")
            }
            created(current)
        }
    }
}
