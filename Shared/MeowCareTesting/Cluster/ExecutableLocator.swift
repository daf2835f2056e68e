import Foundation

/// Finds the service executables a cluster starts. In order:
/// 1. `$MEOWCARE_BIN_DIR`;
/// 2. the directory of the running program, or one above it (this repository's own tests run
///    beside the binaries in `.build/debug`);
/// 3. this package's own build directory, found from this file's path: `.build/debug`, then
///    `.build/release` (a separate package that depends on this repository by path);
/// 4. `PATH`.
/// A directory counts only when it holds both `store-service` and `sync-service`.
///
/// ```swift
/// let binaries = try ExecutableLocator.locate()
/// print(binaries.storeService)
/// ```
public struct ExecutableLocator: Sendable {
    public var directory: String
    public var storeService: String { "\(directory)/store-service" }
    public var syncService: String { "\(directory)/sync-service" }
    /// `meowctl`, when it was built beside them.
    public var meowctl: String? {
        let path = "\(directory)/meowctl"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    public init(directory: String) { self.directory = directory }

    /// Another executable built beside the services (`meowctl`, `echo-baseline`).
    public func path(_ executable: String) -> String { "\(directory)/\(executable)" }

    /// The repository this library was built from (four levels above this file).
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(MeowCareError) -> ExecutableLocator {
        var searched: [String] = []
        if let override = environment["MEOWCARE_BIN_DIR"], !override.isEmpty {
            guard holdsServices(override) else {
                throw MeowCareError(.executablesNotFound, "MEOWCARE_BIN_DIR is \(override), which holds no store-service and sync-service. "
                                    + "Build them with `swift build --package-path \(packageRoot)` and point MEOWCARE_BIN_DIR at the build's bin directory "
                                    + "(`swift build --package-path \(packageRoot) --show-bin-path`).")
            }
            return ExecutableLocator(directory: override)
        }
        var candidates: [String] = []
        if let program = runningProgramDirectory() {
            candidates += [program, (program as NSString).deletingLastPathComponent]
        }
        candidates += ["\(packageRoot)/.build/debug", "\(packageRoot)/.build/release"]
        candidates += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for candidate in candidates where !candidate.isEmpty {
            searched.append(candidate)
            if holdsServices(candidate) { return ExecutableLocator(directory: candidate) }
        }
        throw MeowCareError(.executablesNotFound, "MeowCareTesting could not find store-service and sync-service. Build them with "
                            + "`swift build --package-path \(packageRoot)`, or set MEOWCARE_BIN_DIR to the directory holding them. "
                            + "Looked in: \(searched.prefix(6).joined(separator: ", "))\(searched.count > 6 ? ", and PATH" : "").",
                            details: ["searched": .array(searched.map { .string($0) })])
    }

    static func holdsServices(_ directory: String) -> Bool {
        let files = FileManager.default
        return files.isExecutableFile(atPath: "\(directory)/store-service") && files.isExecutableFile(atPath: "\(directory)/sync-service")
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
}
