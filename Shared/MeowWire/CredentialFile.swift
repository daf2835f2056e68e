#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a credential from a file, so it need not be on a command line (where every local user
/// can read it in /proc/PID/cmdline). The file must not be readable by group or others; one
/// trailing line break is not part of the credential.
///
/// ```swift
/// let secret = try CredentialFile.read("/etc/meowcare/admin.credential")
/// ```
public enum CredentialFile {
    public static func read(_ path: String) throws(CredentialFileError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CredentialFileError("Cannot read the credential file \(path): \(String(cString: strerror(errno))).") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw CredentialFileError("The credential file \(path) is not a regular file.")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw CredentialFileError("The credential file \(path) is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); run 'chmod 600 \(path)'.")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 64 * 1024 {
            let n = chunk.withUnsafeMutableBytes { readBytes(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self) else {
            throw CredentialFileError("The credential file \(path) is empty or not UTF-8 text.")
        }
        return text
    }

    /// The credential from an option's value, a file named by another option, or an environment
    /// variable (none when `variable` is empty), in that order; nil when none is given. Giving both the value and the file is a mistake.
    public static func resolve(value: String?, file: String?, environment variable: String,
                               valueOption: String, fileOption: String) throws(CredentialFileError) -> String? {
        if value != nil, file != nil {
            throw CredentialFileError("Give --\(valueOption) or --\(fileOption), not both.")
        }
        if let value { return value }
        if let file { return try read(file) }
        if !variable.isEmpty, let text = getenv(variable) { return String(cString: text) }
        return nil
    }
}

/// Why a credential could not be read: the message says what to do.
public struct CredentialFileError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// read(2), named apart from `CredentialFile.read` (which would shadow it).
private func readBytes(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}
