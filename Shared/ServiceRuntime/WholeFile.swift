#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import MeowWire

/// A file a service writes or reads on a client's behalf (snapshots): a frame caps what a reply
/// can carry, a file does not. The path is the client's choice but the service opens it, so
/// the rules below keep a client to what it could do itself:
///
/// - With `--snapshot-dir DIR`, every path must lie inside DIR; each step below DIR is opened
///   without following symbolic links, so a link cannot lead out of it.
/// - Without it, only a peer of the service's own uid (or root, who can do more) names paths;
///   a peer of another uid (`--allow-uid`, `--allow-group`) sends its snapshot inline.
/// - Never the service's own files: nothing in its data directory, nor its socket or lock.
/// - The last component is never followed if it is a link; a write goes to a new file with a
///   random name created exclusively beside the target, then renamed over it.
/// - A read is refused with `limitExceeded` when the file is larger than `--max-snapshot-bytes`,
///   before anything is read; the reader takes it in pieces (never whole) and stops at the bound.
public struct WholeFile: Sendable {
    public let service: String
    /// The code for a path the service cannot use (each service's own name for bad arguments).
    public let code: ErrorCode
    let peerUID: UInt32
    let directory: String?
    let maxReadBytes: Int
    let ownFiles: [String]
    let dataDirectory: String?

    /// Writes `data` to `path` (absolute), replacing it whole: a reader never sees half a file
    /// and a failed write leaves the old one.
    public func write(_ data: Data, to path: String) throws {
        _ = try writing(to: path) { file in try data.withUnsafeBytes { try file.write($0) } }
    }

    /// Writes what `body` hands its `SnapshotOutput` to `path` (absolute), a piece at a time,
    /// replacing the file whole once `body` returns: a reader never sees half a file, and a
    /// failure (in `body` too) leaves the old one. Answers `body`'s result and the file's size.
    public func writing<T>(to path: String, _ body: (SnapshotOutput) throws -> T) throws -> (result: T, bytes: Int) {
        let (directoryFD, name) = try open(path)
        defer { close(directoryFD) }
        try refuseOwnFile(directoryFD, name, path: path)
        let temporary = ".\(name).\(Self.randomSuffix()).partial"
        let mode: mode_t = directory == nil ? 0o600 : 0o640
        let fd = openat(directoryFD, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("write", path) }
        let result: T
        let output: SnapshotOutput
        do {
            output = SnapshotOutput { [self] bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { throw failure("write", path) }
                    offset += written
                }
            }
            result = try body(output)
            try output.flush()
            guard fsync(fd) == 0 else { throw failure("write", path) }
            close(fd)
        } catch {
            close(fd)
            unlinkat(directoryFD, temporary, 0)
            throw error
        }
        guard renameat(directoryFD, temporary, directoryFD, name) == 0 else {
            let reason = failure("write", path)
            unlinkat(directoryFD, temporary, 0)
            throw reason
        }
        fsync(directoryFD)
        return (result, output.bytes)
    }

    /// Opens `path` (absolute; a regular file of at most `--max-snapshot-bytes`) and hands `body`
    /// a reader of it at any offset, and its size: the caller reads it in pieces (`JSONStream`),
    /// so the file is never held whole. A read past the bound (the file grew) is `limitExceeded`.
    public func reading<T>(_ path: String, _ body: (_ source: @escaping JSONStream.Source, _ size: Int) throws -> T) throws -> T {
        let (directoryFD, name) = try open(path)
        defer { close(directoryFD) }
        let fd = openat(directoryFD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw failure("read", path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("read", path) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw WireError(code, "The \(service) cannot read \(path): it is not a regular file.", details: ["field": "params.path", "path": .string(path)])
        }
        if isOwnFile(device: info.st_dev, inode: info.st_ino) { throw ownFileRefusal(path) }
        guard Int(info.st_size) <= maxReadBytes else { throw tooLarge(path, bytes: Int(info.st_size)) }
        let source: JSONStream.Source = { offset, buffer in
            while true {
                let count = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { throw failure("read", path) }
                // The file may have grown since fstat: the bound holds for what is read.
                guard offset + count <= maxReadBytes else { throw tooLarge(path, bytes: offset + count) }
                return count
            }
        }
        return try body(source, Int(info.st_size))
    }

    // MARK: Where a path may lead

    /// The directory holding `path`'s last component, opened, and that component.
    private func open(_ path: String) throws -> (Int32, String) {
        guard path.hasPrefix("/") else {
            throw WireError(code, "params.path must be an absolute path (the service's working directory is not the caller's); got '\(path)'.",
                            details: ["field": "params.path", "path": .string(path)])
        }
        let components = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let name = components.last, name != ".", name != ".." else {
            throw WireError(code, "params.path must name a file; got '\(path)'.", details: ["field": "params.path", "path": .string(path)])
        }
        let directoryFD: Int32
        if let directory {
            directoryFD = try openConfined(components, path: path, in: directory)
        } else {
            guard peerUID == getuid() || peerUID == 0 else {
                throw WireError(.permissionFailure, "The \(service) runs as uid \(getuid()) and you are uid \(peerUID): it opens files only for its own user. Send the snapshot inline, or start the service with --snapshot-dir DIR to let other users use files in DIR.",
                                details: ["field": "params.path", "path": .string(path), "uid": .int(Int(peerUID))])
            }
            directoryFD = Glibc.open("/" + components.dropLast().joined(separator: "/"), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard directoryFD >= 0 else { throw failure("reach", path) }
        }
        if isInDataDirectory(directoryFD) {
            close(directoryFD)
            throw ownFileRefusal(path)
        }
        return (directoryFD, name)
    }

    /// Walks from `directory` down to the path's directory, one step at a time, never following a link.
    private func openConfined(_ components: [String], path: String, in directory: String) throws -> Int32 {
        let base = directory.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let real = (realpath(directory, nil).map { pointer in defer { free(pointer) }; return String(cString: pointer) } ?? directory)
            .split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let rest: ArraySlice<String>
        if components.count > base.count, Array(components.prefix(base.count)) == base {
            rest = components.dropFirst(base.count).dropLast()
        } else if components.count > real.count, Array(components.prefix(real.count)) == real {
            rest = components.dropFirst(real.count).dropLast()
        } else {
            throw outside(path)
        }
        guard !rest.contains(where: { $0 == ".." || $0 == "." }) else { throw outside(path) }
        var fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("reach", path) }
        for step in rest {
            let next = openat(fd, step, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let reason = errno
            close(fd)
            guard next >= 0 else {
                if reason == ELOOP || reason == ENOTDIR { throw outside(path) }
                errno = reason
                throw failure("reach", path)
            }
            fd = next
        }
        return fd
    }

    private func isInDataDirectory(_ fd: Int32) -> Bool {
        guard let dataDirectory, let data = Self.realPath(dataDirectory), let opened = Self.path(of: fd) else { return false }
        return opened == data || opened.hasPrefix(data.hasSuffix("/") ? data : data + "/")
    }

    private func refuseOwnFile(_ directoryFD: Int32, _ name: String, path: String) throws {
        var info = stat()
        if fstatat(directoryFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0, isOwnFile(device: info.st_dev, inode: info.st_ino) {
            throw ownFileRefusal(path)
        }
    }

    /// By identity, not name: a hard link elsewhere to one of them is still one of them.
    private func isOwnFile(device: dev_t, inode: ino_t) -> Bool {
        let inData = dataDirectory.map { directory in
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).map { "\(directory)/\($0)" }
        } ?? []
        return (ownFiles + inData).contains { own in
            var info = stat()
            return stat(own, &info) == 0 && info.st_dev == device && info.st_ino == inode
        }
    }

    // MARK: Errors

    private func outside(_ path: String) -> WireError {
        WireError(.permissionFailure, "\(path) is not inside the snapshot directory \(directory ?? "") (--snapshot-dir), or a symbolic link leads out of it: the \(service) opens snapshot files there only.",
                  details: ["field": "params.path", "path": .string(path), "snapshotDir": .string(directory ?? "")])
    }

    private func ownFileRefusal(_ path: String) -> WireError {
        WireError(.permissionFailure, "\(path) is one of the \(service)'s own files (its data directory, socket or lock): a snapshot never goes there. Choose another path.",
                  details: ["field": "params.path", "path": .string(path)])
    }

    private func tooLarge(_ path: String, bytes: Int) -> WireError {
        WireError(.limitExceeded, "\(path) holds \(bytes) bytes, more than the \(service) reads as a snapshot (\(maxReadBytes), --max-snapshot-bytes). Nothing was imported.",
                  details: ["field": "params.path", "path": .string(path), "limit": .int(maxReadBytes), "bytes": .int(bytes)])
    }

    private func failure(_ verb: String, _ path: String) -> WireError {
        let reason = errno == ELOOP ? "it is a symbolic link (name the file itself)" : String(cString: strerror(errno))
        return WireError(code, "The \(service) cannot \(verb) \(path): \(reason) (it runs as uid \(getuid()); the path must be one that user may \(verb)).",
                         details: ["field": "params.path", "path": .string(path)])
    }

    // MARK: Helpers

    private static func randomSuffix() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 16) + String(generator.next() as UInt64, radix: 16)
    }

    private static func realPath(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// Where an open directory is now (Linux keeps it in /proc/self/fd).
    private static func path(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension ServiceConfiguration {
    /// The file rules for a request from `peer`.
    public func files(for peer: PeerCredentials, service: String, code: ErrorCode, alsoOwn: [String] = []) -> WholeFile {
        var dataDirectory: String?
        if case let .dataDirectory(directory) = persistence { dataDirectory = directory }
        return WholeFile(service: service, code: code, peerUID: peer.uid, directory: snapshotDirectory, maxReadBytes: maxSnapshotBytes,
                         ownFiles: [socketPath, socketPath + ".lock"] + alsoOwn, dataDirectory: dataDirectory)
    }
}

/// A snapshot file being written (`WholeFile.writing`): text is gathered and written out 1 MiB at
/// a time, so an export holds that much of the file, never all of it.
public final class SnapshotOutput {
    private let sink: (UnsafeRawBufferPointer) throws -> Void
    private var pending = ""
    /// Bytes handed over so far.
    public private(set) var bytes = 0

    init(_ sink: @escaping (UnsafeRawBufferPointer) throws -> Void) { self.sink = sink }

    /// Appends `text`; what is gathered goes out once it passes 1 MiB.
    public func write(_ text: String) throws {
        pending += text
        if pending.utf8.count >= 1 << 20 { try flush() }
    }

    /// Writes `build`'s text (appended to the gathered text in place).
    public func write(_ build: (inout String) -> Void) throws {
        build(&pending)
        if pending.utf8.count >= 1 << 20 { try flush() }
    }

    func write(_ raw: UnsafeRawBufferPointer) throws {
        try flush()
        try sink(raw)
        bytes += raw.count
    }

    func flush() throws {
        guard !pending.isEmpty else { return }
        var text = pending
        pending = ""
        try text.withUTF8 { try sink(UnsafeRawBufferPointer($0)) }
        bytes += text.utf8.count
    }
}
