import Foundation

/// Where the package's executables are: beside the test bundle (both live in the build
/// directory), or in $MEOWCARE_BIN_DIR when set.
public enum Binaries {
    public static var directory: String {
        if let override = ProcessInfo.processInfo.environment["MEOWCARE_BIN_DIR"], !override.isEmpty { return override }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test runner may be inside <name>.xctest/…; climb to the directory holding the binaries.
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("store-service").path), url.path != "/" {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    public static func path(_ name: String) -> String { "\(directory)/\(name)" }
}
