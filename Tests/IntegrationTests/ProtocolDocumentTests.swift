import Foundation
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// docs/PROTOCOL.md's Python client is run against a live service, so the document cannot
/// drift from the code.
@Suite("docs/PROTOCOL.md")
struct ProtocolDocumentTests {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/PROTOCOL.md")

    /// The first ```python block, and the ``` block right after it (the documented output).
    static func example() throws -> (program: String, output: String) {
        let text = try String(contentsOf: document, encoding: .utf8)
        let afterPython = try #require(text.range(of: "```python\n"))
        let programEnd = try #require(text.range(of: "\n```", range: afterPython.upperBound..<text.endIndex))
        let program = String(text[afterPython.upperBound..<programEnd.lowerBound])
        let outputStart = try #require(text.range(of: "```\n", range: programEnd.upperBound..<text.endIndex))
        let outputEnd = try #require(text.range(of: "\n```", range: outputStart.upperBound..<text.endIndex))
        return (program, String(text[outputStart.upperBound..<outputEnd.lowerBound]))
    }

    @Test("the Python example runs against a live store-service and prints what the document says")
    func pythonExample() async throws {
        let (program, expected) = try Self.example()
        let service = try await RunningService.start("store-service")
        let script = service.directory.file("client.py")
        try program.write(toFile: script, atomically: true, encoding: .utf8)
        let result = try await MeowProcess.run("/usr/bin/env", ["python3", script, service.socket])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == expected)
        _ = await service.process.stop()
    }

    @Test("every connection-level error code the runtime can send is documented")
    func errorCodesDocumented() throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        for code in ["frameTooLarge", "emptyFrame", "truncatedFrame", "invalidUTF8", "invalidJSON", "notAnObject",
                     "missingField", "invalidField", "helloRequired", "helloAlreadyDone", "unsupportedVersion",
                     "unknownOp", "notAuthenticated", "permissionFailure", "internalError", "tooManyConnections",
                     "peerNotAllowed", "resyncRequired", "shuttingDown", "helloTimeout", "tooManyFailedHellos", "bufferBudgetExceeded"] {
            #expect(text.contains("`\(code)`"), "docs/PROTOCOL.md does not document \(code)")
        }
    }
}
