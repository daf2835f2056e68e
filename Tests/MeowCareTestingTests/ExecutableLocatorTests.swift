import Foundation
@testable import MeowCareCluster
import MeowCareTesting
import TestSupport
import Testing

/// Where a cluster's services come from (docs/TESTING.md, "Where the services come from"): an
/// installed prefix or PATH as readily as a checkout's `.build`, and which rule found them.
@Suite struct ExecutableLocatorTests {
    /// A prefix laid out as `install.sh --prefix` leaves it, whose `bin` holds wrappers that note
    /// each start in `started` before running this build's service: a cluster that used the
    /// prefix leaves lines there.
    final class InstalledPrefix: Sendable {
        let directory = TemporaryDirectory(prefix: "mcpfx")
        var path: String { directory.path }
        var bin: String { "\(directory.path)/bin" }

        init() throws {
            let built = try ExecutableLocator.locate()
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            for name in ["store-service", "sync-service"] {
                let wrapper = "#!/bin/sh\necho \(name) >> '\(directory.path)/started'\nexec '\(built.path(name))' \"$@\"\n"
                try Executables.writeScript(wrapper, to: "\(bin)/\(name)")
            }
        }

        var starts: [String] {
            ((try? String(contentsOfFile: "\(path)/started", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init).sorted()
        }
    }

    @Test func aClusterRunsTheServicesOfThePrefixInMEOWCARE_PREFIXAndSaysSo() async throws {
        let prefix = try InstalledPrefix()
        // This repository's .build is near (the test program runs in it): the prefix still wins.
        let found = try ExecutableLocator.locate(environment: ["MEOWCARE_PREFIX": prefix.path, "PATH": "/usr/bin:/bin"])
        #expect(found.source == .prefix)
        #expect(found.directory == prefix.bin)
        #expect(found.summary == "store-service and sync-service from \(prefix.bin) (found by MEOWCARE_PREFIX)")

        var configuration = MeowClusterConfiguration(devices: ["A": "olivia"])
        configuration.executables = found
        configuration.externalDeployment = nil
        let cluster = try await MeowCluster.start(configuration)
        let session = try await cluster["A"].insert("CareSession", ["id": "s1", "title": "Mochi"])
        _ = try await cluster["A"].sync.send()
        #expect(try await cluster.cloud.admin.listUsers().compactMap { $0["user"]?.stringValue } == ["olivia"])
        #expect(session.store == "Private")
        #expect(cluster.executables?.source == .prefix)
        await cluster.stop()
        #expect(prefix.starts == ["store-service", "sync-service"])
    }

    @Test func theExplicitDirectoryComesBeforeThePrefix() throws {
        let prefix = try InstalledPrefix()
        let built = try ExecutableLocator.locate()
        let found = try ExecutableLocator.locate(environment: ["MEOWCARE_BIN_DIR": built.directory, "MEOWCARE_PREFIX": prefix.path])
        #expect(found.source == .binDirectory)
        #expect(found.directory == built.directory)
    }

    @Test func aBuildNearbyComesBeforePATHAndPATHIsUsedWhenNoneIs() throws {
        let prefix = try InstalledPrefix()
        let built = try ExecutableLocator.locate()
        let path = "/nonexistent/meowcare:\(prefix.bin):/usr/bin"
        let nearby = try ExecutableLocator.locate(environment: ["PATH": path], builds: [("/nonexistent/build", .packageBuild), (built.directory, .packageBuild)])
        #expect(nearby.source == .packageBuild)
        #expect(nearby.directory == built.directory)
        let installed = try ExecutableLocator.locate(environment: ["PATH": path], builds: [("/nonexistent/build", .packageBuild)])
        #expect(installed.source == .path)
        #expect(installed.directory == prefix.bin)
    }

    @Test func thisRepositorysTestsRunTheBuildBesideThem() throws {
        let found = try ExecutableLocator.locate(environment: ["PATH": "/usr/bin:/bin"])
        #expect(found.source == .runningProgram)
    }

    @Test func aPrefixWithoutTheServicesSaysHowToInstallThem() throws {
        let empty = TemporaryDirectory(prefix: "mcpfx")
        let error = #expect(throws: MeowCareError.self) { try ExecutableLocator.locate(environment: ["MEOWCARE_PREFIX": empty.path]) }
        #expect(error?.code == .executablesNotFound)
        #expect(error?.message.contains("install.sh --prefix \(empty.path)") == true)
    }
}
