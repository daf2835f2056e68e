import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import Synchronization

extension ErrorCode {
    /// A sync.* or share.* op on a store-service started without --sync-socket.
    public static let mirrorNotConfigured: ErrorCode = "mirrorNotConfigured"
}

struct MirrorNowResult: Codable, Sendable {
    var send: MirrorSendReport
    var fetch: MirrorFetchReport
}

/// `account.signIn`.
struct SignInParams: Codable, Sendable {
    /// The cloud user's credential; absent: the one the service started with.
    var credential: String?
}

/// `sync.status`.
struct MirrorStatus: Codable, Sendable {
    struct StoreStatus: Codable, Sendable {
        var store: String
        var database: DatabaseScope
        var pending: Int
        var pendingByZone: [String: Int]
        var deferred: Int
        /// The last history token moved into the queue, and the store's newest token.
        var exportCursor: Int
        var historyToken: Int
        /// Local transactions (not the mirror's imports) after the cursor, not yet queued.
        var unqueuedTransactions: Int
        var databaseToken: String?
        var zoneTokens: [String: String]
        /// Seed 002: shared-store objects outside any share zone, never exported.
        var unexportable: [String]
        /// Records the server refused at their last send (a production schema without their
        /// field or record type, a field of another type), with its error; they stay queued.
        var refusedExports: [RefusedExport]
        /// Cloud records the store refused (a value it cannot hold, written by another client):
        /// left out of the import, kept as they were here, tried again when they change.
        var unimportable: [MirrorBookkeeping.Unimportable]
        /// Records this device deleted, remembered until a whole fetch after the delete (a move
        /// by another device that beat the delete is then seen, and the delete follows it).
        var deletesRemembered: Int
        /// A fetch's deletions held for its end: none once a fetch has ended on a round that found
        /// no changes (one whose rounds ran out while zones still changed leaves them to the next).
        var tombstonesHeld: Int
        /// Relationships of imported objects whose destination record has not arrived yet
        /// (`PendingLinks`), each with how long it has waited.
        var pendingLinks: [PendingLinkStatus]
    }
    struct PendingLinkStatus: Codable, Sendable {
        var recordName: String
        var entity: String
        var relationship: String
        var target: String
        var zone: String?
        var waitingSeconds: Double
    }
    var user: String?
    /// False after account.signOut, until account.signIn.
    var signedIn: Bool
    var device: String
    /// The cloud environment the mirror syncs with.
    var environment: CloudEnvironment
    var mode: MirrorSyncMode
    var conflictPolicy: MirrorConflictPolicy
    var stores: [StoreStatus]
    var inFlight: String?
    var lastError: WireError?
    /// When the last sync step finished without an error (ISO 8601).
    var lastSuccess: String?
    var batchLimit: Int
    var quiescent: Bool
}

extension CloudMirror {
    /// `body`, answered only after every notice it gave rise to went out: an explicit sync's
    /// reply comes after its imports' remote-change events (which a fetched page's commit
    /// sends once the log is synced: `OrderedAnnouncer`), as before pages stopped waiting.
    func announced<T>(_ body: () throws -> T) throws -> T {
        defer { engine.announcer.drain() }
        return try body()
    }

    func status() throws -> MirrorStatus {
        let progress = progress.withLock { $0 }
        let now = clock.seconds()
        let stores: [MirrorStatus.StoreStatus] = try withStores { stores in
            try stores.list.map { store in
                // Queue what was saved since the last sync step, so the counts are current.
                try ingest(store)
                let state = MirrorBookkeeping(store)
                let cursor = Int(try state.value(MirrorBookkeeping.exportCursorKey) ?? "0") ?? 0
                var byZone: [String: Int] = [:]
                var deferred = 0
                let pending = try state.allPending()
                for entry in pending {
                    if entry.notBefore > now { deferred += 1 }
                    let zone: ZoneID?
                    if entry.kind == .delete {
                        zone = entry.zone
                    } else {
                        zone = try store.model.entity(named: entry.entity).flatMap { try self.zone(for: entry.uuid, entity: $0, state: state) }
                    }
                    byZone[zone?.key ?? "none", default: 0] += 1
                }
                var tokens: [String: String] = [:]
                for row in try store.database.query("SELECT key, value FROM mirror_kv WHERE key LIKE 'zoneToken:%'") {
                    tokens[String((row[0].string ?? "").dropFirst("zoneToken:".count))] = row[1].string
                }
                let unqueued = try store.database.scalar("SELECT count(*) FROM z_transaction WHERE token > ? AND author != ?",
                                                         [cursor, SaveOperation.syncAuthor])?.int ?? 0
                return .init(store: store.name, database: Self.database(of: store), pending: pending.count, pendingByZone: byZone,
                             deferred: deferred, exportCursor: cursor, historyToken: Int(store.lastToken), unqueuedTransactions: unqueued,
                             databaseToken: try state.value(MirrorBookkeeping.databaseTokenKey), zoneTokens: tokens,
                             unexportable: try state.unexportable(), refusedExports: refusedExports(store: store.name),
                             unimportable: try state.unimportable(),
                             deletesRemembered: try state.rememberedDeletes,
                             tombstonesHeld: try state.heldTombstoneCount,
                             pendingLinks: try PendingLinks(database: store.database).all().map {
                                 .init(recordName: $0.recordName, entity: $0.entity, relationship: $0.relationship, target: $0.target, zone: $0.zone,
                                       waitingSeconds: max(0, (now - $0.since).rounded()))
                             })
            }
        }
        let quiescent = progress.inFlight == nil && stores.allSatisfy { $0.pending == 0 && $0.unqueuedTransactions == 0 && $0.tombstonesHeld == 0 }
        return MirrorStatus(user: user, signedIn: isSignedIn, device: options.deviceName, environment: options.environment, mode: options.mode, conflictPolicy: options.conflictPolicy, stores: stores,
                            inFlight: progress.inFlight, lastError: progress.lastError,
                            lastSuccess: progress.lastSuccess.map { MirrorRecordCoding.isoFormat.format($0) },
                            batchLimit: progress.batchLimit, quiescent: quiescent)
    }
}

/// The mirror as a store-service's companion: made from the command line's options, it opens
/// its tables and starts once the stores are open, and serves the sync.*, share.* and account.*
/// operations. Without options (no `--sync-socket`) it mirrors nothing and those operations
/// answer `mirrorNotConfigured`, so a client learns why rather than meeting an unknown op.
public final class CloudMirrorCompanion: StoreCompanion {
    let options: MirrorOptions?
    private let slot = Mutex<CloudMirror?>(nil)

    public init(options: MirrorOptions?) {
        self.options = options
    }

    package var topics: [String] { [CloudMirror.cloudKitEventsTopic] }
    package var mirrors: Bool { options != nil }

    func mirror() throws -> CloudMirror {
        guard let mirror = slot.withLock({ $0 }) else {
            throw ServiceError(.mirrorNotConfigured, "This store-service does not mirror to a cloud; start it with --sync-socket PATH --sync-credential SECRET.")
        }
        return mirror
    }

    /// Opens the mirror's tables and starts automatic mode (when configured), which syncs as
    /// soon as a local writer commits rather than at its next look at the history.
    package func start(engine: StoreEngine) throws {
        guard let options else { return }
        let mirror = try CloudMirror(options: options, engine: engine)
        slot.withLock { $0 = mirror }
        if options.mode == .automatic {
            engine.observeCommits { notices in
                if notices.contains(where: { $0.author != SaveOperation.syncAuthor }) { mirror.localSaveCommitted() }
            }
        }
        mirror.startAutomatic()
    }

    package func stop() {
        slot.withLock { $0 }?.stop()
    }

    package func pausing<T>(_ body: () throws -> T) throws -> T {
        guard let mirror = slot.withLock({ $0 }) else { return try body() }
        return try mirror.pausingSync(body)
    }

    package func registerOperations(in registry: inout OperationRegistry) {
        registry.register("sync.send", params: Empty.self, summary: "Sends the queued local changes to the cloud.") { [self] _, _ in
            let mirror = try mirror()
            return try mirror.announced { try mirror.exclusive("send") { try mirror.sendAll() } }
        }
        registry.register("sync.fetch", params: Empty.self, summary: "Fetches and applies the cloud's changes.") { [self] _, _ in
            let mirror = try mirror()
            return try mirror.announced { try mirror.exclusive("fetch") { try mirror.fetchAll() } }
        }
        registry.register("sync.now", params: Empty.self, summary: "Sends, then fetches.") { [self] _, _ in
            let mirror = try mirror()
            return try mirror.announced { try mirror.exclusive("now") { MirrorNowResult(send: try mirror.sendAll(), fetch: try mirror.fetchAll()) } }
        }
        registry.register("sync.initializeSchema", params: InitializeSchemaParams.self,
                          summary: "Saves and deletes one record per entity so the cloud's schema knows every field (initializeCloudKitSchema).") { [self] params, request in
            let mirror = try mirror()
            return try mirror.exclusive("initializeSchema") {
                try mirror.initializeSchema(dryRun: params.dryRun ?? false, progress: ProgressReporter(request))
            }
        }
        registry.register("account.signOut", params: Empty.self, summary: "Signs the device out of its cloud account: syncing stops and the account's data leaves the stores.") { [self] _, _ in
            let mirror = try mirror()
            return try mirror.exclusive("account.signOut") { try mirror.signOut() }
        }
        registry.register("account.signIn", params: SignInParams.self, summary: "Signs in (default: the start-up credential) and connects; another user's account clears the local data first.") { [self] params, _ in
            let mirror = try mirror()
            return try mirror.exclusive("account.signIn") { try mirror.signIn(credential: params.credential) }
        }
        registry.register("sync.status", params: Empty.self, summary: "Queues, tokens, in-flight work, last error, quiescence.") { [self] _, _ in
            try mirror().status()
        }
        registry.register("share.create", params: ShareCreateParams.self, summary: "Owner: shares an object graph in a new share zone.") { [self] params, request in
            let mirror = try mirror()
            return try mirror.exclusive("share.create") { try mirror.createShare(params, progress: ProgressReporter(request)) }
        }
        let ownerOps = [("share.invite", "participants.add", "Owner: invites a user (user, permission)."),
                        ("share.setPermission", "participants.setPermission", "Owner: changes a participant's permission."),
                        ("share.removeParticipant", "participants.remove", "Owner: removes a participant.")]
        for (name, cloudOp, summary) in ownerOps {
            registry.register(name, params: ShareZoneParams.self, summary: summary) { [self] params, _ in
                let mirror = try mirror()
                return try mirror.exclusive(name) { try mirror.ownerShareOp(cloudOp, params) }
            }
        }
        registry.register("share.stop", params: ShareZoneParams.self, summary: "Owner: ends a share.") { [self] params, _ in
            let mirror = try mirror()
            return try mirror.exclusive("share.stop") { try mirror.stopShare(params) }
        }
        registry.register("share.accept", params: ShareZoneParams.self, summary: "Participant: accepts a share and fetches it into the shared store.") { [self] params, _ in
            let mirror = try mirror()
            return try mirror.exclusive("share.accept") { try mirror.acceptShare(params) }
        }
        registry.register("share.leave", params: ShareZoneParams.self, summary: "Participant: leaves a share; its data leaves the shared store.") { [self] params, _ in
            let mirror = try mirror()
            return try mirror.exclusive("share.leave") { try mirror.leaveShare(params) }
        }
        registry.register("share.invitations", params: Empty.self, summary: "The shares this user is invited to or accepted.") { [self] _, _ in
            let mirror = try mirror()
            return try mirror.exclusive("share.invitations") { CloudMirror.withoutKeptTexts(try mirror.call("shares.invitations", [:])) }
        }
        registry.register("share.owned", params: Empty.self, summary: "The shares this user owns, with their participants.") { [self] _, _ in
            let mirror = try mirror()
            return try mirror.exclusive("share.owned") { CloudMirror.withoutKeptTexts(try mirror.call("shares.owned", [:])) }
        }
    }
}
