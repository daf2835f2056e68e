#if canImport(Glibc)
import Glibc
#endif
import Foundation
import CloudWire
import MeowWire

/// admin.exportSnapshot and admin.importSnapshot through a file the service writes or reads: a
/// snapshot inline must fit in one frame (16 MiB by default), one in a file has no such limit.
enum SnapshotFile {
    /// Writes `snapshot` to `path` (absolute; created 0600 and replaced whole: written beside it,
    /// then renamed, so a reader never sees half a snapshot).
    static func write(_ snapshot: CloudSnapshot, to path: String) throws -> Int {
        try checkAbsolute(path)
        let data: Data
        do { data = try JSONEncoder().encode(snapshot) } catch {
            throw WireError(.internalError, "Cannot encode the snapshot: \(error).")
        }
        let temporary = "\(path).\(getpid()).partial"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("write", path) }
        let file = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            try file.write(contentsOf: data)
            try file.synchronize()
            try file.close()
        } catch {
            unlink(temporary)
            throw WireError(.invalidArguments, "The sync-service cannot write \(path): \(error.localizedDescription).", details: ["path": .string(path)])
        }
        guard rename(temporary, path) == 0 else {
            let reason = failure("write", path)
            unlink(temporary)
            throw reason
        }
        return data.count
    }

    /// The snapshot in `path` (absolute), as `admin.exportSnapshot` writes it.
    static func read(_ path: String) throws -> CloudSnapshot {
        try checkAbsolute(path)
        guard let data = FileManager.default.contents(atPath: path) else { throw failure("read", path) }
        do { return try JSONDecoder().decode(CloudSnapshot.self, from: data) } catch {
            throw WireError(.invalidArguments, "\(path) is not a snapshot (\(data.count) bytes; expected the JSON admin.exportSnapshot writes).")
        }
    }

    private static func checkAbsolute(_ path: String) throws {
        guard path.hasPrefix("/") else {
            throw WireError(.invalidArguments, "params.path must be an absolute path (the service's working directory is not the caller's); got '\(path)'.")
        }
    }

    private static func failure(_ verb: String, _ path: String) -> WireError {
        WireError(.invalidArguments, "The sync-service cannot \(verb) \(path): \(String(cString: strerror(errno))) (it runs as uid \(getuid()); the path must be one that user may \(verb)).",
                  details: ["path": .string(path)])
    }
}

/// admin.exportSnapshot's answer: the snapshot itself, or where it was written.
public struct SnapshotExport: Encodable, Sendable {
    public var snapshot: CloudSnapshot?
    public var path: String?
    public var bytes: Int?
    public var tables: [String: Int]?
}
