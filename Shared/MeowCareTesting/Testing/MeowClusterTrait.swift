import Foundation
import MeowCareCluster
import Synchronization
import Testing

/// A Swift Testing trait that gives each test its own cluster (`MeowCluster.current`), stopped
/// when the test ends however it ends; when the test fails, the services' logs, the cloud's
/// request log and the frame trace are attached to it. On a suite, each test of the suite gets
/// a cluster of its own. Tests with clusters run in parallel: nothing is shared between them.
///
/// ```swift
/// @Test(.meowCluster(devices: ["A": "olivia", "P": "pablo"]))
/// func participantSeesTheSession() async throws {
///     let cluster = try MeowCluster.current
///     …
/// }
/// ```
public struct MeowClusterTrait: TestTrait, SuiteTrait, TestScoping {
    public let configuration: MeowClusterConfiguration

    public init(configuration: MeowClusterConfiguration) { self.configuration = configuration }

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // A suite's own scope: its tests each get theirs.
        guard testCase != nil else { return try await function() }
        let cluster = try await MeowCluster.start(configuration)
        let failed = Atomic(false)
        let failures = Mutex<[String]>([])
        let observer = IssueHandlingTrait.compactMapIssues { issue in
            if issue.isFailure {
                failed.store(true, ordering: .relaxed)
                failures.withLock { $0.append(String(describing: issue)) }
            }
            return issue
        }
        do {
            try await MeowCluster.withCurrent(cluster) {
                try await observer.provideScope(for: test, testCase: testCase, performing: function)
            }
        } catch {
            await FailureArtifacts.attach(cluster, failures: failures.withLock { $0 } + [String(describing: error)])
            await cluster.stop()
            throw error
        }
        if failed.load(ordering: .relaxed) { await FailureArtifacts.attach(cluster, failures: failures.withLock { $0 }) }
        await cluster.stop()
    }
}

extension Trait where Self == MeowClusterTrait {
    /// A cluster of these devices and users, in order: `.meowCluster(devices: ["A": "olivia", "P": "pablo"])`.
    /// `model` is your Core Data model (an `.xcdatamodeld` bundle, an `.xcdatamodel` or the JSON
    /// form; a relative path is from the directory `swift test` runs in, your package's root);
    /// nil runs MeowCare's own.
    public static func meowCluster(devices: KeyValuePairs<String, String>, model: String? = nil,
                                   persistence: MeowClusterConfiguration.Persistence = .inMemory,
                                   syncMode: MeowClusterConfiguration.SyncMode = .manual) -> Self {
        configured(MeowClusterConfiguration(devices: devices), model: model, persistence: persistence, syncMode: syncMode)
    }

    /// A cluster of devices of one user: `.meowCluster(devices: ["A", "B"])`.
    public static func meowCluster(devices: [String], user: String = "owner", model: String? = nil,
                                   persistence: MeowClusterConfiguration.Persistence = .inMemory,
                                   syncMode: MeowClusterConfiguration.SyncMode = .manual) -> Self {
        configured(MeowClusterConfiguration(devices: devices, user: user), model: model, persistence: persistence, syncMode: syncMode)
    }

    private static func configured(_ base: MeowClusterConfiguration, model: String?, persistence: MeowClusterConfiguration.Persistence,
                                   syncMode: MeowClusterConfiguration.SyncMode) -> Self {
        var configuration = base
        configuration.modelFile = model
        configuration.persistence = persistence
        configuration.syncMode = syncMode
        return MeowClusterTrait(configuration: configuration)
    }

    /// A cluster of any configuration.
    public static func meowCluster(_ configuration: MeowClusterConfiguration) -> Self {
        MeowClusterTrait(configuration: configuration)
    }
}

/// Starts a cluster, runs `body` with it (also as `MeowCluster.current`) and stops it, also
/// when `body` throws. The form for XCTest and for code outside a trait. When `body` throws
/// inside a Swift Testing test, the logs, request log and frame trace are attached; outside
/// one (XCTest) they are written to a `/tmp/meowcare-failure.*` directory named on stderr.
///
/// ```swift
/// try await withMeowCluster(devices: ["A": "olivia", "B": "olivia"]) { cluster in
///     try await cluster["A"].insert("CareSession", ["id": "s1"])
///     try await cluster.settle()
/// }
/// ```
public func withMeowCluster<T: Sendable>(_ configuration: MeowClusterConfiguration,
                                         _ body: (MeowCluster) async throws -> T) async throws -> T {
    let cluster = try await MeowCluster.start(configuration)
    do {
        let result = try await MeowCluster.withCurrent(cluster) { try await body(cluster) }
        await cluster.stop()
        return result
    } catch {
        if Test.current != nil {
            await FailureArtifacts.attach(cluster, failures: [String(describing: error)])
        } else if let directory = await FailureArtifacts.save(cluster) {
            FileHandle.standardError.write(Data("MeowCareTesting: the failed cluster's logs, request log and frame trace are in \(directory)\n".utf8))
        }
        await cluster.stop()
        throw error
    }
}

/// `withMeowCluster` with devices and their users, in order.
public func withMeowCluster<T: Sendable>(devices: KeyValuePairs<String, String>, persistence: MeowClusterConfiguration.Persistence = .inMemory,
                                         syncMode: MeowClusterConfiguration.SyncMode = .manual,
                                         _ body: (MeowCluster) async throws -> T) async throws -> T {
    var configuration = MeowClusterConfiguration(devices: devices)
    configuration.persistence = persistence
    configuration.syncMode = syncMode
    return try await withMeowCluster(configuration, body)
}
