import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import StoreServiceKit
import Synchronization
import StoreWire

/// Delete versus edit (docs/RULES.md, mirroring: delete versus edit), per entity.
public enum MirrorDeletePolicy: String, Sendable, Codable, CaseIterable {
    /// The delete stands: the edit is dropped.
    case deleteWins
    /// The edit brings the record back (re-created without a change tag).
    case resurrect
}

/// The cloud mirror's command-line options (`--sync-socket` turns mirroring on).
public struct MirrorOptions: Sendable {
    public var syncSocket: String
    public var credential: String
    public var deviceName: String = "device"
    /// The cloud environment the mirror's hello chooses: development (a build from Xcode) or
    /// production (an App Store or TestFlight build).
    public var environment: CloudEnvironment = .development
    public var mode: MirrorSyncMode = .manual
    public var conflictPolicy: MirrorConflictPolicy = .latestEdit
    /// Entity → policy; entities not listed use `deleteWins`.
    public var deletePolicies: [String: MirrorDeletePolicy] = [:]
    /// Items per records.modify request to start with (CloudKit's limit is 400); halved on
    /// limitExceeded. Smaller batches make a small data set behave as a large one: share.create
    /// then moves a session of more than (size - 1) / 2 records root first.
    public var batchSize = BatchSizing.largest

    public init(syncSocket: String, credential: String) {
        self.syncSocket = syncSocket
        self.credential = credential
    }

    public func deletePolicy(_ entity: String) -> MirrorDeletePolicy { deletePolicies[entity] ?? .deleteWins }

    public static let commandLineOptions: [CommandLineParser.Option] = [
        .init("sync-socket", value: "PATH", help: "Mirror the stores to the sync-service listening on PATH (needs --sync-credential)."),
        .init("sync-credential", value: "SECRET", help: "The cloud user's credential the mirror says hello with. A command line is visible to every local user: prefer --sync-credential-file or $MEOW_SYNC_CREDENTIAL."),
        .init("sync-credential-file", value: "FILE", help: "Read the cloud user's credential from FILE (mode 0600 or stricter; one trailing newline ignored)."),
        .init("device-name", value: "NAME", help: "This device's name: breaks ties between equal edit times (default 'device')."),
        .init("environment", value: "ENV", help: "The cloud environment to sync with: development (default; a build run from Xcode) or production (an App Store or TestFlight build: only deployed record types and fields)."),
        .init("sync-mode", value: "MODE", help: "manual (default: only sync.send/sync.fetch/sync.now) or automatic (also after saves and cloud pushes)."),
        .init("conflict-policy", value: "POLICY", help: "A field both sides changed: latestEdit (default), serverWins or clientWins."),
        .init("delete-policy", value: "ENTITY=POLICY", help: "Delete versus edit for ENTITY: deleteWins (default) or resurrect (repeatable).", repeatable: true),
        .init("batch-size", value: "N", help: "Items per records.modify request to start with, 1-400 (default 400; halved on limitExceeded)."),
    ]

    /// The mirror options, or nil when `--sync-socket` is absent.
    public static func from(_ options: ParsedOptions) throws(UsageError) -> MirrorOptions? {
        guard let socket = options.value("sync-socket") else {
            if options.value("sync-credential") != nil || options.value("sync-credential-file") != nil {
                throw UsageError("--sync-credential needs --sync-socket PATH.")
            }
            if options.value("environment") != nil {
                throw UsageError("--environment chooses the cloud environment to mirror to: it needs --sync-socket PATH.")
            }
            return nil
        }
        let given: String?
        do {
            given = try CredentialFile.resolve(value: options.value("sync-credential"), file: options.value("sync-credential-file"),
                                               environment: "MEOW_SYNC_CREDENTIAL", valueOption: "sync-credential", fileOption: "sync-credential-file")
        } catch {
            throw UsageError(error.message)
        }
        guard let credential = given, !credential.isEmpty else {
            throw UsageError("--sync-socket needs the cloud user's credential: --sync-credential-file FILE, $MEOW_SYNC_CREDENTIAL or --sync-credential SECRET.")
        }
        var result = MirrorOptions(syncSocket: socket, credential: credential)
        if let name = options.value("device-name") {
            guard !name.isEmpty else { throw UsageError("--device-name must not be empty.") }
            result.deviceName = name
        }
        if let text = options.value("environment") {
            guard let environment = CloudEnvironment(rawValue: text) else {
                throw UsageError("--environment must be development or production; got '\(text)'.")
            }
            result.environment = environment
        }
        if let text = options.value("sync-mode") {
            guard let mode = MirrorSyncMode(rawValue: text) else { throw UsageError("--sync-mode must be manual or automatic; got '\(text)'.") }
            result.mode = mode
        }
        if let text = options.value("conflict-policy") {
            guard let policy = MirrorConflictPolicy(rawValue: text) else {
                throw UsageError("--conflict-policy must be latestEdit, serverWins or clientWins; got '\(text)'.")
            }
            result.conflictPolicy = policy
        }
        for text in options.all("delete-policy") {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let policy = MirrorDeletePolicy(rawValue: parts[1]) else {
                throw UsageError("--delete-policy must be ENTITY=deleteWins or ENTITY=resurrect; got '\(text)'.")
            }
            result.deletePolicies[parts[0]] = policy
        }
        if let text = options.value("batch-size") {
            guard let size = Int(text), (1...BatchSizing.largest).contains(size) else {
                throw UsageError("--batch-size must be a whole number from 1 to \(BatchSizing.largest); got '\(text)'.")
            }
            result.batchSize = size
        }
        return result
    }
}
