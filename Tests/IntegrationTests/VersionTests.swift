import Foundation
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

/// Every executable's `--version` names the repository's VERSION (the release artefact's version;
/// scripts/version-check.py holds the Python package's to it, scripts/package-test.sh the release build's).
@Suite struct VersionTests {
    @Test(arguments: ["store-service", "sync-service", "meowctl", "meow-bench"])
    func everyExecutableNamesTheRepositorysVersion(_ executable: String) async throws {
        let version = try String(contentsOfFile: "\(ExecutableLocator.packageRoot)/VERSION", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let run = try await MeowProcess.run(try ExecutableLocator.locate().path(executable), ["--version"])
        #expect(run.status == 0, "\(executable) --version: \(run.stderr)")
        #expect(run.stdout == "\(executable) \(version)\n")
    }
}
