import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire
import Synchronization

/// The mirror as a store-service's companion: made from the command line's options, it opens
/// its tables and starts once the stores are open, and serves the sync.*, share.* and account.*
/// operations. Without options (no `--sync-socket`) it mirrors nothing and those operations
/// answer `mirrorNotConfigured`, so a client learns why rather than meeting an unknown op.
public final class CloudMirrorCompanion: StoreCompanion {
    let options: MirrorOptions?
    private let slot = Mutex<MirrorEngine?>(nil)

    public init(options: MirrorOptions?) {
        self.options = options
    }

    package var topics: [String] { [MirrorEngine.cloudKitEventsTopic] }
    package var mirrors: Bool { options != nil }

    func mirror() throws -> MirrorEngine {
        guard let mirror = slot.withLock({ $0 }) else {
            throw ServiceError(.mirrorNotConfigured, "This store-service does not mirror to a cloud; start it with --sync-socket PATH --sync-credential SECRET.")
        }
        return mirror
    }

    /// Opens the mirror's tables and starts automatic mode (when configured), which syncs as
    /// soon as a local writer commits rather than at its next look at the history.
    package func start(engine: StoreEngine) throws {
        guard let options else { return }
        let mirror = try MirrorEngine(options: options, stores: CoreDataStores(engine: engine), mapping: CoreDataMapping(options: options, engine: engine))
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
        // A snapshot carries and replaces the mirror's tables: they exist before it runs.
        try mirror.stores.makeTables()
        return try mirror.pausingSync(body)
    }

    /// Forgets the zones' change tokens and the database's, so the next fetch lists the zones
    /// and reads them whole, their share records included.
    package func relearnShares(of zones: [ZoneID], in store: PersistentStore) throws {
        guard !zones.isEmpty else { return }
        let state = StoreBookkeeping(store)
        for zone in zones { try state.setValue(MirrorBookkeeping.zoneTokenKey(zone), nil) }
        try state.setValue(MirrorBookkeeping.databaseTokenKey, nil)
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
            return try mirror.announced { try mirror.exclusive("now") { SyncNowResult(send: try mirror.sendAll(), fetch: try mirror.fetchAll()) } }
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
        registry.register("sync.status", params: SyncStatusParams.self, summary: "Queues, tokens, in-flight work, last error, quiescence.") { [self] params, _ in
            try mirror().status(unsent: params.unsent ?? false)
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
            return try mirror.exclusive("share.invitations") { try mirror.call("shares.invitations", [:]) }
        }
        registry.register("share.owned", params: Empty.self, summary: "The shares this user owns, with their participants.") { [self] _, _ in
            let mirror = try mirror()
            return try mirror.exclusive("share.owned") { try mirror.call("shares.owned", [:]) }
        }
    }
}
