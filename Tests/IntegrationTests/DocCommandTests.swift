import Foundation
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

/// Every shell block a reader would paste from README.md and docs/ runs as written
/// (scripts/doc-commands.py: one bash per document, the built executables on PATH), or is
/// marked with why it cannot run here and what covers it instead.
@Suite("Command blocks of the README and docs", .timeLimit(.minutes(10)))
struct DocCommandTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("every shell block of README.md and docs/ runs as written, or says why not")
    func blocksRun() async throws {
        let script = Self.root.appendingPathComponent("scripts/doc-commands.py").path
        let result = try await MeowProcess.run("/usr/bin/env", ["python3", script, "--bin", try ExecutableLocator.locate().directory], timeout: .seconds(900))
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        // The README's own block is one that runs: a marker on it would hide a broken README.
        #expect(result.stdout.contains("README.md: 1 block(s) passed"), "\(result.stdout)")
        #expect(!result.stdout.contains("FAILED"))
    }
}
