import Foundation
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Input whose size or depth the services bound before it can take them down.
@Suite("Bounded input")
struct BoundedInputTests {
    @Test("a model nested past 64 elements deep is refused at start-up with a message, not followed until the stack runs out")
    func deeplyNestedModel() async throws {
        let directory = TemporaryDirectory()
        let model = directory.file("Deep.xcdatamodel")
        try FileManager.default.createDirectory(atPath: model, withIntermediateDirectories: false)
        let depth = 200_000
        let text = #"<?xml version="1.0"?><model>"# + String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth) + "</model>"
        try text.write(toFile: model + "/contents", atomically: false, encoding: .utf8)
        let result = try await MeowProcess.run("store-service", ["--socket", directory.file("s.sock"), "--in-memory", "--model", model])
        #expect(result.status == 78, "exit \(result.status): \(result.stderr.suffix(400))")
        #expect(result.stderr.contains("nests elements more than 64 deep"), "\(result.stderr.suffix(400))")
    }
}
