#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import MeowWire

/// A file a service writes or reads on a client's behalf (snapshots): a frame caps what a reply
/// can carry, a file does not. The path is the caller's choice, so every failure names it and
/// the uid the service runs as, which is what a person needs to fix it.
public enum WholeFile {
    /// Writes `data` to `path` (absolute): created 0600 beside it, synced, then renamed over it,
    /// so a reader never sees half a file and a failed write leaves the old one.
    public static func write(_ data: Data, to path: String, service: String, code: ErrorCode) throws {
        try checkAbsolute(path, code: code)
        let temporary = "\(path).\(getpid()).partial"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("write", path, service: service, code: code) }
        let file = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            try file.write(contentsOf: data)
            try file.synchronize()
            try file.close()
        } catch {
            unlink(temporary)
            throw WireError(code, "The \(service) cannot write \(path): \(error.localizedDescription).", details: ["path": .string(path)])
        }
        guard rename(temporary, path) == 0 else {
            let reason = failure("write", path, service: service, code: code)
            unlink(temporary)
            throw reason
        }
    }

    /// The contents of `path` (absolute).
    public static func read(_ path: String, service: String, code: ErrorCode) throws -> Data {
        try checkAbsolute(path, code: code)
        guard let data = FileManager.default.contents(atPath: path) else { throw failure("read", path, service: service, code: code) }
        return data
    }

    private static func checkAbsolute(_ path: String, code: ErrorCode) throws {
        guard path.hasPrefix("/") else {
            throw WireError(code, "params.path must be an absolute path (the service's working directory is not the caller's); got '\(path)'.",
                            details: ["field": "params.path", "path": .string(path)])
        }
    }

    private static func failure(_ verb: String, _ path: String, service: String, code: ErrorCode) -> WireError {
        WireError(code, "The \(service) cannot \(verb) \(path): \(String(cString: strerror(errno))) (it runs as uid \(getuid()); the path must be one that user may \(verb)).",
                  details: ["field": "params.path", "path": .string(path)])
    }
}
