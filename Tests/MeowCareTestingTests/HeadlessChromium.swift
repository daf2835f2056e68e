import Foundation
import Testing

/// Debian's chromium, headless: loads a page from disk, runs its script, and dumps the DOM a
/// person would see or a screenshot of it. scripts/setup.sh installs it; a machine without it
/// skips the browser tests with that message, except where MEOWCARE_REQUIRE_BROWSER is set
/// (.ci/run), where its absence fails them.
struct HeadlessChromium {
    let path: String

    static let found: String? = ["chromium", "chromium-browser"].lazy.compactMap { name -> String? in
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }.first

    static let required = ProcessInfo.processInfo.environment["MEOWCARE_REQUIRE_BROWSER"] == "1"
    static let skipMessage: Comment = "chromium is not installed: run scripts/setup.sh (apt-get install chromium) to run the browser tests"

    /// The browser, or a test failure when it must be there.
    static func require() throws -> HeadlessChromium {
        guard let found else {
            throw BrowserMissing(description: "chromium is not on PATH and MEOWCARE_REQUIRE_BROWSER=1: run scripts/setup.sh")
        }
        return HeadlessChromium(path: found)
    }

    struct BrowserMissing: Error, CustomStringConvertible { var description: String }

    /// The DOM after the page's script ran. `fragment`: the URL's `#…` (the page's view state).
    func dumpDOM(_ file: String, fragment: String = "") throws -> String {
        try run(["--dump-dom", url(file, fragment)])
    }

    /// The DOM without the page's scripts (its data holds every value, shown or not): what the
    /// page's script drew.
    func visibleDOM(_ file: String, fragment: String = "") throws -> String {
        let dom = try dumpDOM(file, fragment: fragment)
        return dom.range(of: "<script").map { String(dom[..<$0.lowerBound]) } ?? dom
    }

    /// A PNG of the page as a 1400×1000 window shows it.
    func screenshot(_ file: String, to png: String, fragment: String = "") throws {
        _ = try run(["--screenshot=\(png)", "--window-size=1400,1000", "--hide-scrollbars", url(file, fragment)])
    }

    private func url(_ file: String, _ fragment: String) -> String {
        "file://\(file)" + (fragment.isEmpty ? "" : "#\(fragment)")
    }

    private func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        // --no-sandbox: the tests may run as root (a container), where chromium's sandbox refuses to start.
        let profile = NSTemporaryDirectory() + "meow-chromium-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: profile) }
        process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile)",
                             "--allow-file-access-from-files"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BrowserMissing(description: "chromium exited with status \(process.terminationStatus) for \(arguments.joined(separator: " "))")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
