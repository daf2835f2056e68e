import Foundation
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// The README's main command tells the MeowCare story against a local deployment; here the same
/// story runs on temp directories (deploy/meowcare-local + meowctl demo; the build is the test
/// run's own), and every check of it must pass.
@Suite("The MeowCare demo")
struct DemoTests {
    @Test("the demo passes every check against a fresh deployment, which then leaves nothing running",
          arguments: [["--in-memory"], []])
    func demoPasses(storage: [String]) async throws {
        let directory = TemporaryDirectory(prefix: "demo")
        let deploy = DeployTests()
        try await deploy.withDeployment(in: directory) { try await tell(storage, directory, deploy) }
    }

    private func tell(_ storage: [String], _ directory: TemporaryDirectory, _ deploy: DeployTests) async throws {
        let up = try await deploy.run(["up", "--dir", directory.path] + storage)
        #expect(up.status == 0, "\(up.stderr)")
        let demo = try await MeowProcess.run("meowctl", ["demo", "--dir", directory.path], timeout: .seconds(120))
        let failures = demo.stdout.split(separator: "\n").filter { $0.contains("✘") }
        #expect(demo.status == 0, "failed checks:\n\(failures.joined(separator: "\n"))\n\(demo.stderr)")
        #expect(demo.stdout.contains("== Verdict:") && demo.stdout.contains(" 0 failed"))
        #expect(demo.stdout.contains("Illegal attempt to work with the core-data or default zone in the shared database"))
        #expect(demo.stdout.contains("Can't reassign an object to a different store once it has been saved."))
        #expect(demo.stdout.contains("refused: Cannot create or modify field 'CD_mood' in record 'CD_CareEvent' in production schema"))
        let down = try await deploy.run(["down", "--dir", directory.path])
        #expect(down.status == 0)
    }
}
