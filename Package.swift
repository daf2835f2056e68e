// swift-tools-version:6.0
// MeowCare store/sync pair: a device's Core Data stack (store-service) and a CloudKit
// stand-in (sync-service), speaking length-prefixed JSON over Unix sockets.
// No package dependencies by design: the toolchain and Debian's C libraries only.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]
// The services' own modules: concrete generic types' metadata through accessor functions, not
// mangled names. A mangled name is demangled at first use and its generic requirements checked
// by scanning every conformance record of the process (a few such scans at each start:
// `_DictionaryStorage<String, …>`, Codable's containers). Only on modules no library product
// uses: SwiftPM refuses unsafe flags in a versioned dependency's products, and app teams depend
// on MeowCareTesting and the wire modules.
let service: [SwiftSetting] = strict + [.unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"])]

let package = Package(
    name: "MeowCare",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "store-service", targets: ["store-service"]),
        .executable(name: "sync-service", targets: ["sync-service"]),
        .executable(name: "meowctl", targets: ["meowctl"]),
        .executable(name: "meow-bench", targets: ["meow-bench"]),
        .library(name: "MeowWire", targets: ["MeowWire"]),
        .library(name: "CloudWire", targets: ["CloudWire"]),
        .library(name: "StoreWire", targets: ["StoreWire"]),
        // For app teams' test targets: an isolated cloud and devices per test (docs/TESTING.md).
        .library(name: "MeowCareTesting", targets: ["MeowCareTesting"]),
        .library(name: "MeowHistory", targets: ["MeowHistory"]),
        .library(name: "MeowExplore", targets: ["MeowExplore"]),
    ],
    targets: [
        // C helpers Glibc does not expose to Swift (SO_PEERCRED's struct ucred, accept4).
        .target(name: "CShim", path: "Shared/CShim"),
        .systemLibrary(
            name: "CSQLite", path: "Shared/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite"], path: "Shared/SQLiteKit", swiftSettings: service),
        // The wire protocol and its Swift client: all a client needs.
        .target(name: "MeowWire", dependencies: ["CShim"], path: "Shared/MeowWire", swiftSettings: strict),
        // The cloud protocol (what the sync-service speaks): zone and record identities, CloudKit's
        // names, records and their fields, the messages. All a cloud client needs, without SQLite.
        .target(name: "CloudWire", dependencies: ["MeowWire"], path: "Shared/CloudWire", swiftSettings: strict),
        // The store protocol (what a store-service speaks): its ops' params and results, and the
        // Core Data vocabulary they carry (scopes, merge policies, routing). All a store client needs.
        // On CloudWire because the mirror's answers carry the cloud's own values (share.create's
        // and share.accept's share record, permissions, a zone's database and environment): one
        // declaration of each, where the cloud protocol keeps it.
        .target(name: "StoreWire", dependencies: ["MeowWire", "CloudWire"], path: "Shared/StoreWire", swiftSettings: strict),
        // Listener, connections, lifecycle, signals, logging, options.
        .target(name: "ServiceRuntime", dependencies: ["MeowWire", "CShim"], path: "Shared/ServiceRuntime", swiftSettings: service),

        .target(name: "StoreServiceKit", dependencies: ["ServiceRuntime", "MeowWire", "CloudWire", "StoreWire", "SQLiteKit"],
                path: "Services/StoreServiceKit", swiftSettings: service),
        // The CloudKit mirror (NSPersistentCloudKitContainer's part): its engine (batches, pages,
        // retries, tokens) and its mapping (objects and records, merges, shares), on the stack's
        // StoreCompanion seam and the cloud protocol.
        .target(name: "CloudMirrorKit", dependencies: ["StoreServiceKit", "ServiceRuntime", "MeowWire", "CloudWire", "StoreWire", "SQLiteKit"],
                path: "Services/CloudMirrorKit", swiftSettings: service),
        .target(name: "SyncServiceKit", dependencies: ["ServiceRuntime", "MeowWire", "CloudWire", "SQLiteKit"],
                path: "Services/SyncServiceKit", swiftSettings: service),
        .target(name: "MeowCtlKit", dependencies: ["MeowWire", "CloudWire", "StoreWire", "MeowInspection", "MeowExplore", "MeowHistory", "MeowReport", "CShim"], path: "Services/MeowCtlKit", swiftSettings: strict),
        // The checks `meowctl doctor` and `diff` run (a device's invariants, a device against the
        // cloud), without the command line: MeowCareTesting's assertions run the same ones.
        .target(name: "MeowInspection", dependencies: ["MeowWire", "CloudWire", "StoreWire"], path: "Shared/MeowInspection", swiftSettings: strict),
        // The test library: the cluster fixture and typed clients (no Swift Testing, so tools such
        // as meow-bench can use it), and its Swift Testing face (trait, attachments, issues).
        // What an explored run did and the checks that judge it (docs/EXPLORING.md): no processes,
        // so the checker is tested on crafted histories alone.
        .target(name: "MeowHistory", dependencies: ["MeowWire"], path: "Shared/MeowHistory", swiftSettings: strict),
        // A report as one HTML page (the request log, frame trace, service logs, an explored
        // history): meowctl report and the test libraries' failure attachments share it.
        .target(name: "MeowReport", dependencies: ["MeowWire"], path: "Shared/MeowReport",
                resources: [.embedInCode("Assets/report.js"), .embedInCode("Assets/report.css")], swiftSettings: strict),
        .target(name: "MeowCareCluster", dependencies: ["MeowWire", "CloudWire", "StoreWire", "MeowInspection", "CShim"],
                path: "Shared/MeowCareTesting/Cluster", swiftSettings: strict),
        // The schedule explorer: a team's flow run under seeded schedules on one cluster, each
        // run recorded as a history, judged, shrunk and replayed (docs/EXPLORING.md).
        .target(name: "MeowExplore", dependencies: ["MeowHistory", "MeowReport", "MeowCareCluster", "MeowWire", "CloudWire", "StoreWire"],
                path: "Shared/MeowExplore", swiftSettings: strict),
        .target(name: "MeowCareTesting", dependencies: ["MeowCareCluster", "MeowExplore", "MeowHistory", "MeowReport", "MeowWire", "CloudWire"],
                path: "Shared/MeowCareTesting/Testing", swiftSettings: strict),
        .executableTarget(name: "store-service", dependencies: ["StoreServiceKit", "CloudMirrorKit", "ServiceRuntime"],
                          path: "Services/store-service", swiftSettings: service),
        .executableTarget(name: "sync-service", dependencies: ["SyncServiceKit", "ServiceRuntime"],
                          path: "Services/sync-service", swiftSettings: service),
        .executableTarget(name: "meowctl", dependencies: ["MeowCtlKit"], path: "Services/meowctl", swiftSettings: strict),

        // Benchmarks: a raw C echo server with the same framing is the same-run baseline.
        .executableTarget(name: "echo-baseline", path: "Benchmarks/echo-baseline"),
        .executableTarget(name: "meow-bench", dependencies: ["MeowWire", "CloudWire", "SQLiteKit", "MeowCareCluster", "MeowExplore", "MeowHistory", "CShim"],
                          path: "Benchmarks/meow-bench", swiftSettings: strict),

        .target(name: "TestSupport", dependencies: ["MeowWire", "CShim"], path: "Tests/TestSupport", swiftSettings: strict),
        .testTarget(name: "MeowWireTests", dependencies: ["MeowWire"], path: "Tests/MeowWireTests", swiftSettings: strict),
        .testTarget(name: "CloudWireTests", dependencies: ["CloudWire", "MeowWire"], path: "Tests/CloudWireTests", swiftSettings: strict),
        .testTarget(name: "StoreWireTests", dependencies: ["StoreWire", "CloudWire", "MeowWire"], path: "Tests/StoreWireTests", swiftSettings: strict),
        .testTarget(name: "MeowHistoryTests", dependencies: ["MeowHistory", "MeowWire"], path: "Tests/MeowHistoryTests", swiftSettings: strict),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit"], path: "Tests/SQLiteKitTests", swiftSettings: strict),
        .testTarget(name: "StoreServiceTests", dependencies: ["CloudWire", "StoreWire", "StoreServiceKit", "TestSupport", "MeowWire", "SQLiteKit", "MeowCareCluster"],
                    path: "Tests/StoreServiceTests", swiftSettings: strict),
        .testTarget(name: "SyncServiceTests", dependencies: ["CloudWire", "SyncServiceKit", "TestSupport", "MeowWire", "SQLiteKit", "MeowCareCluster"],
                    path: "Tests/SyncServiceTests", swiftSettings: strict),
        .testTarget(name: "MirrorTests", dependencies: ["CloudWire", "StoreWire", "StoreServiceKit", "CloudMirrorKit", "SyncServiceKit", "TestSupport", "MeowWire", "SQLiteKit", "MeowCareCluster"],
                    path: "Tests/MirrorTests", swiftSettings: strict),
        .testTarget(name: "ServiceRuntimeTests", dependencies: ["ServiceRuntime", "MeowWire", "TestSupport", "MeowCareCluster"],
                    path: "Tests/ServiceRuntimeTests", swiftSettings: strict),
        .testTarget(name: "MeowCareTestingTests", dependencies: ["MeowCareTesting", "MeowHistory", "TestSupport"],
                    path: "Tests/MeowCareTestingTests", swiftSettings: strict),
        .testTarget(name: "ExploreTests", dependencies: ["MeowExplore", "MeowHistory", "MeowCareTesting", "TestSupport"],
                    path: "Tests/ExploreTests", swiftSettings: strict),
        .testTarget(name: "IntegrationTests", dependencies: ["TestSupport", "MeowWire", "CloudWire", "MeowCareCluster"],
                    path: "Tests/IntegrationTests", swiftSettings: strict),
    ]
)

// libFuzzer targets (Tests/Fuzz/<name>): no main of their own. Built with --sanitize=fuzzer
// (scripts/fuzz.sh: swift build --product fuzz-frame --sanitize=fuzzer --scratch-path .build-fuzz)
// libFuzzer's main drives them; in a normal build they link as programs that do nothing, so
// every build still compiles them against the current MeowWire and CloudWire.
for name in ["fuzz-frame", "fuzz-envelope"] {
    package.products.append(.executable(name: name, targets: [name]))
    package.targets.append(.executableTarget(name: name, dependencies: ["MeowWire", "CloudWire"], path: "Tests/Fuzz/\(name)", swiftSettings: strict))
}
