import Foundation

/// Puts an executable file in place by running `install -m 755` in a child process.
///
/// A test program spawns services from many threads at once; a file it wrote itself was open for
/// writing in this process for a moment, and a child spawned in that moment inherits the
/// descriptor, so exec of the file fails with ETXTBSY until that child execs. Written by another
/// process, the file is never open for writing here.
public enum Executables {
    public static func install(from source: String, to destination: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/install")
        process.arguments = ["-m", "755", source, destination]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("install \(source) → \(destination) failed: \(message)")
        }
    }

    /// A shell script at `destination` whose text is `script`; the text goes first to a file
    /// beside it that is never executed.
    public static func writeScript(_ script: String, to destination: String) throws {
        let text = destination + ".text"
        try script.write(toFile: text, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: text) }
        try install(from: text, to: destination)
    }
}
