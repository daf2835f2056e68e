import Foundation
import Synchronization

/// Finds the service executables a cluster starts. In order:
/// 1. `$MEOWCARE_BIN_DIR`;
/// 2. `$MEOWCARE_PREFIX/bin` (where `install.sh --prefix DIR` of the release artefact put them);
/// 3. the directory of the running program, or one above it (this repository's own tests run
///    beside the binaries in `.build/debug`);
/// 4. this package's own build directory, found from this file's path: `.build/debug`, then
///    `.build/release` (a separate package that depends on this repository by path);
/// 5. `PATH` (an install into `/usr/local`, or any prefix whose `bin` is on it).
/// A directory counts only when it holds both `store-service` and `sync-service`. `source` says
/// which rule matched; a cluster logs it once per test process.
///
/// ```swift
/// let binaries = try ExecutableLocator.locate()
/// print(binaries.storeService, binaries.source)
/// ```
public struct ExecutableLocator: Sendable {
    /// Which rule found the directory.
    public enum Source: String, Sendable, CustomStringConvertible {
        case binDirectory = "MEOWCARE_BIN_DIR"
        case prefix = "MEOWCARE_PREFIX"
        case runningProgram = "the running program's directory"
        case packageBuild = "this package's .build"
        case path = "PATH"
        /// Made with `init(directory:)`, not found.
        case given = "the caller"

        public var description: String { rawValue }
    }

    public var directory: String
    public var source: Source
    public var storeService: String { "\(directory)/store-service" }
    public var syncService: String { "\(directory)/sync-service" }
    /// `meowctl`, when it was built beside them.
    public var meowctl: String? {
        let path = "\(directory)/meowctl"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }
    /// One line for a log: which executables, found how.
    public var summary: String { "store-service and sync-service from \(directory) (found by \(source))" }

    public init(directory: String, source: Source = .given) {
        self.directory = directory
        self.source = source
    }

    /// Another executable built beside the services (`meowctl`, `echo-baseline`).
    public func path(_ executable: String) -> String { "\(directory)/\(executable)" }

    /// The repository this library was built from (four levels above this file).
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(MeowCareError) -> ExecutableLocator {
        try locate(environment: environment, builds: nearbyBuilds())
    }

    /// `builds`: the directories of rules 3 and 4, in order (tests pass their own to reach `PATH`).
    static func locate(environment: [String: String], builds: [(String, Source)]) throws(MeowCareError) -> ExecutableLocator {
        if let override = nonEmpty(environment["MEOWCARE_BIN_DIR"]) {
            guard holdsServices(override) else {
                throw MeowCareError(.executablesNotFound, "MEOWCARE_BIN_DIR is \(override), which holds no store-service and sync-service. "
                                    + "Build them with `swift build --package-path \(packageRoot)` and point MEOWCARE_BIN_DIR at the build's bin directory "
                                    + "(`swift build --package-path \(packageRoot) --show-bin-path`).")
            }
            return ExecutableLocator(directory: override, source: .binDirectory)
        }
        if let prefix = nonEmpty(environment["MEOWCARE_PREFIX"]) {
            let directory = "\(prefix)/bin"
            guard holdsServices(directory) else {
                throw MeowCareError(.executablesNotFound, "MEOWCARE_PREFIX is \(prefix), whose bin holds no store-service and sync-service. "
                                    + "Install the release artefact there (`./install.sh --prefix \(prefix)`) or unset MEOWCARE_PREFIX.")
            }
            return ExecutableLocator(directory: directory, source: .prefix)
        }
        let onPath = (environment["PATH"] ?? "").split(separator: ":").map { (String($0), Source.path) }
        var searched: [String] = []
        for (candidate, source) in builds + onPath where !candidate.isEmpty {
            searched.append(candidate)
            if holdsServices(candidate) { return ExecutableLocator(directory: candidate, source: source) }
        }
        throw MeowCareError(.executablesNotFound, "MeowCareTesting could not find store-service and sync-service. Build them with "
                            + "`swift build --package-path \(packageRoot)`, install the release artefact and put its bin on PATH "
                            + "(or set MEOWCARE_PREFIX), or set MEOWCARE_BIN_DIR to the directory holding them. "
                            + "Looked in: \(searched.prefix(6).joined(separator: ", "))\(searched.count > 6 ? ", and PATH" : "").",
                            details: ["searched": .array(searched.map { .string($0) })])
    }

    /// Rules 3 and 4: the running program's directory and the one above, this package's builds.
    static func nearbyBuilds() -> [(String, Source)] {
        var builds: [(String, Source)] = []
        if let program = runningProgramDirectory() {
            builds += [(program, .runningProgram), ((program as NSString).deletingLastPathComponent, .runningProgram)]
        }
        return builds + [("\(packageRoot)/.build/debug", .packageBuild), ("\(packageRoot)/.build/release", .packageBuild)]
    }

    static func holdsServices(_ directory: String) -> Bool {
        let files = FileManager.default
        return files.isExecutableFile(atPath: "\(directory)/store-service") && files.isExecutableFile(atPath: "\(directory)/sync-service")
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    private static func runningProgramDirectory() -> String? {
        #if os(Linux)
        let program = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments.first
        #else
        let program = Bundle.main.executablePath ?? CommandLine.arguments.first
        #endif
        guard let program, !program.isEmpty else { return nil }
        return (program as NSString).deletingLastPathComponent
    }

    /// The summary last written to stderr: a test process logs where its services come from once,
    /// and again only if that changes, not once per cluster.
    private static let announced = Mutex<String?>(nil)

    /// Writes `summary` to stderr unless it was the last one written.
    func announce() {
        let line = summary
        let isNew = Self.announced.withLock { last in
            defer { last = line }
            return last != line
        }
        if isNew { FileHandle.standardError.write(Data("MeowCareTesting: \(line)\n".utf8)) }
    }
}
