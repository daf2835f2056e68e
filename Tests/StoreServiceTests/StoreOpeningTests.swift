import Foundation
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

/// A store-service opens its two stores at once (each on a thread of its own): a store that
/// cannot be opened still fails the start cleanly, with SQLite's reason, and the healthy one
/// beside it does not hide or outlive the failure.
@Suite struct StoreOpeningTests {
    @Test(arguments: ["MeowCare-Private.sqlite", "MeowCare-Shared.sqlite"])
    func aStoreFileThatIsNotADatabaseFailsTheStartWithItsReason(_ damaged: String) async throws {
        let directory = TemporaryDirectory()
        let data = directory.file("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try String(repeating: "not a database ", count: 100).write(toFile: "\(data)/\(damaged)", atomically: true, encoding: .utf8)
        let result = try await MeowProcess.run("store-service", ["--socket", directory.file("s.sock"), "--data-dir", data], timeout: .seconds(20))
        // 1: "could not start", never a crash (128 + a signal) or a hang.
        #expect(result.status == 1)
        let failure = try #require(result.stderr.split(separator: "\n").first { $0.contains("could not start") })
        #expect(failure.contains("not a database"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("s.sock")))
    }
}
