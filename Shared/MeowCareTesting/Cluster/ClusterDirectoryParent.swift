#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CShim

/// Where a cluster's fresh directory is made. A cluster that keeps nothing on disk (every
/// configured store in memory) goes on a tmpfs, /dev/shm, when there is one: its files are only
/// sockets, lock files, logs and the users file, and on a disk mounted with `discard` each such
/// file's removal waits for the device (a service's stop waited about a millisecond on its
/// socket's lock file). A cluster with SQLite files stays under /tmp, on the disk its durability
/// is about.
enum ClusterDirectoryParent {
    static let disk = "/tmp"
    static let memory = "/dev/shm"

    static func choose(for configuration: MeowClusterConfiguration) -> String {
        let onDisk = configuration.persistence == .sqlite || configuration.devices.contains { $0.persistence == .sqlite }
        return !onDisk && isWritableTmpfs(memory) ? memory : disk
    }

    /// Room a tmpfs must have free to be chosen: a container's /dev/shm is often 64 MiB, which
    /// the logs of a long explore run could fill; such a machine gets /tmp instead.
    static let minimumFreeBytes: UInt64 = 512 << 20

    /// True when `path` is a directory on a tmpfs this process may create entries in, with
    /// `minimumFreeBytes` free.
    static func isWritableTmpfs(_ path: String) -> Bool {
        var stats = statvfs()
        guard meow_is_tmpfs(path) == 1, access(path, W_OK | X_OK) == 0, statvfs(path, &stats) == 0 else { return false }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize) >= minimumFreeBytes
    }
}
