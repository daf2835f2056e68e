import CloudWire
import MeowWire
import ServiceRuntime

public struct CreateUserParams: Codable, Sendable {
    public var user: String
    public var credential: String
}

public struct AccountStatusParams: Codable, Sendable {
    public var user: String
    public var status: AccountStatus
}

public struct UsersResult: Codable, Sendable {
    public var users: [UserSummary]
}

/// Params of admin ops that work on one environment: `environment` (default: the one the
/// connection's hello chose).
public struct EnvironmentParams: Codable, Sendable {
    public var environment: String?

    /// `engine` (the connection's environment's) or the one the params name.
    func engine(_ engine: CloudEngine) throws -> CloudEngine {
        engine.inEnvironment(try CloudEnvironment.named(environment, field: "params.environment", fallback: engine.environment))
    }
}

public struct ImportSnapshotParams: Codable, Sendable {
    /// The snapshot inline, or the absolute path of a file holding it (one of the two).
    public var snapshot: CloudSnapshot?
    public var path: String?
}

/// The sync-service's operation table: users' ops (access `.authenticated`, account status
/// checked on every request) and admin ops (access `.admin`).
struct SyncOperations {
    let service: SyncService

    func register(in registry: inout OperationRegistry) {
        registerDatabaseOperations(in: &registry)
        registerSharingOperations(in: &registry)
        registerSubscriptionOperations(in: &registry)
        registerAccountAdministration(in: &registry)
        registerSnapshotAdministration(in: &registry)
        registerEnvironmentAdministration(in: &registry)
        registerTestControls(in: &registry)
    }

    /// A user's op: authenticated, the account's status checked on every request. Params that
    /// read themselves (`JSONReadable`) and results that write their own text (`JSONTextWritable`)
    /// take the overloads below, so the registry's matching overload is chosen here at compile
    /// time (a generic wrapper would hide them: the registry asserts against that in debug builds).
    private func user<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ registry: inout OperationRegistry, _ name: String, _ type: P.Type, _ summary: String,
        _ body: @escaping @Sendable (CloudEngine, String, P, RequestTrace) throws -> R
    ) {
        registry.register(name, params: type, access: .authenticated, summary: summary, handler: userHandler(body))
    }

    private func user<P: Decodable & Sendable & JSONReadable, R: Encodable & Sendable>(
        _ registry: inout OperationRegistry, _ name: String, _ type: P.Type, _ summary: String,
        _ body: @escaping @Sendable (CloudEngine, String, P, RequestTrace) throws -> R
    ) {
        registry.register(name, params: type, access: .authenticated, summary: summary, handler: userHandler(body))
    }

    private func user<P: Decodable & Sendable, R: Encodable & Sendable & JSONTextWritable>(
        _ registry: inout OperationRegistry, _ name: String, _ type: P.Type, _ summary: String,
        _ body: @escaping @Sendable (CloudEngine, String, P, RequestTrace) throws -> R
    ) {
        registry.register(name, params: type, access: .authenticated, summary: summary, handler: userHandler(body))
    }

    private func user<P: Decodable & Sendable & JSONReadable, R: Encodable & Sendable & JSONTextWritable>(
        _ registry: inout OperationRegistry, _ name: String, _ type: P.Type, _ summary: String,
        _ body: @escaping @Sendable (CloudEngine, String, P, RequestTrace) throws -> R
    ) {
        registry.register(name, params: type, access: .authenticated, summary: summary, handler: userHandler(body))
    }

    private func userHandler<P: Sendable, R>(_ body: @escaping @Sendable (CloudEngine, String, P, RequestTrace) throws -> R)
        -> @Sendable (P, RequestContext) throws -> R {
        let service = service
        return { params, context in
            try service.run(context, checkAccount: true, target: { FaultTarget(of: params) }) { engine, caller, trace in try body(engine, caller, params, trace) }
        }
    }

    /// An admin op, run against the connection's environment's engine. No admin op's params read
    /// themselves nor does its result write its own text; the registry's debug assertion names
    /// the first that would, which then needs overloads like `user`'s.
    private func admin<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ registry: inout OperationRegistry, _ name: String, _ type: P.Type, _ summary: String,
        _ body: @escaping @Sendable (CloudEngine, P) throws -> R
    ) {
        let service = service
        registry.register(name, params: type, access: .admin, summary: summary) { params, context in
            try service.run(context, checkAccount: false) { engine, _, _ in try body(engine, params) }
        }
    }

    /// Zones, records and their changes.
    private func registerDatabaseOperations(in registry: inout OperationRegistry) {
        user(&registry, "zones.save", ZonesParams.self, "Creates custom zones in the private database.") { try $0.saveZones(caller: $1, $2, trace: $3) }
        user(&registry, "zones.fetch", ZonesParams.self, "Fetches the listed zones, or every zone of a database.") { try $0.fetchZones(caller: $1, $2, trace: $3) }
        user(&registry, "zones.delete", ZonesParams.self, "Deletes (or purges) zones of the private database.") { try $0.deleteZones(caller: $1, $2, trace: $3) }
        user(&registry, "records.modify", ModifyParams.self, "Saves and deletes records (CloudKit's decision table).") { try $0.modifyRecords(caller: $1, $2, trace: $3) }
        user(&registry, "records.fetch", FetchRecordsParams.self, "Fetches records by ID.") { try $0.fetchRecords(caller: $1, $2, trace: $3) }
        user(&registry, "changes.fetchZone", FetchZoneChangesParams.self, "Records changed and deleted since a zone token.") { try $0.fetchZoneChanges(caller: $1, $2, trace: $3, fieldsAsText: true) }
        user(&registry, "changes.fetchDatabase", FetchDatabaseChangesParams.self, "Zones changed, deleted, purged since a database token.") {
            try $0.fetchDatabaseChanges(caller: $1, $2, trace: $3)
        }
    }

    /// Shares and their participants.
    private func registerSharingOperations(in registry: inout OperationRegistry) {
        user(&registry, "shares.fetch", ShareParams.self, "A share record with its participants.") { try $0.fetchShare(caller: $1, $2, trace: $3) }
        user(&registry, "shares.accept", ShareParams.self, "Accepts a share; its zone appears in the shared database.") { try $0.acceptShare(caller: $1, $2, trace: $3) }
        user(&registry, "shares.leave", ShareParams.self, "Leaves a share; its zone leaves the shared database.") { try $0.leaveShare(caller: $1, $2, trace: $3) }
        user(&registry, "shares.setPublicPermission", ShareParams.self, "Owner: none, readOnly or readWrite for anyone who accepts.") {
            try $0.setPublicPermission(caller: $1, $2, trace: $3)
        }
        user(&registry, "shares.invitations", Empty.self, "Shares the caller is invited to or has accepted.") { engine, caller, _, _ in try engine.invitations(caller: caller) }
        user(&registry, "shares.owned", Empty.self, "The shares the caller owns, with their participants.") { engine, caller, _, _ in try engine.ownedShares(caller: caller) }
        user(&registry, "participants.add", ShareParams.self, "Owner: invites a user with a permission.") { try $0.addParticipant(caller: $1, $2, trace: $3) }
        user(&registry, "participants.setPermission", ShareParams.self, "Owner: changes a participant's permission.") {
            try $0.setParticipantPermission(caller: $1, $2, trace: $3)
        }
        user(&registry, "participants.remove", ShareParams.self, "Owner: removes a participant.") { try $0.removeParticipant(caller: $1, $2, trace: $3) }
        user(&registry, "participants.validate", ParticipantsValidateParams.self, "Checks invitations for a new share; writes nothing.") { engine, caller, params, _ in
            try engine.validateParticipants(caller: caller, params)
        }
    }

    /// Subscriptions: the cloud's own objects, per user, database and environment.
    private func registerSubscriptionOperations(in registry: inout OperationRegistry) {
        user(&registry, "subscriptions.save", SaveSubscriptionsParams.self, "Saves (or replaces) database, recordZone and query subscriptions.") {
            try $0.saveSubscriptions(caller: $1, $2, trace: $3)
        }
        user(&registry, "subscriptions.fetch", SubscriptionIDsParams.self, "The caller's subscriptions of a database (or the listed ones).") {
            try $0.fetchSubscriptions(caller: $1, $2, trace: $3)
        }
        user(&registry, "subscriptions.delete", SubscriptionIDsParams.self, "Deletes the caller's listed subscriptions of a database.") {
            try $0.deleteSubscriptions(caller: $1, $2, trace: $3)
        }

    }

    /// Users and their accounts, and clearing data.
    private func registerAccountAdministration(in registry: inout OperationRegistry) {
        admin(&registry, "admin.createUser", CreateUserParams.self, "Creates a user with a credential.") { try $0.createUser($1.user, credential: $1.credential) }
        admin(&registry, "admin.setAccountStatus", AccountStatusParams.self, "available, noAccount or temporarilyUnavailable.") { try $0.setAccountStatus($1.user, $1.status) }
        admin(&registry, "admin.listUsers", Empty.self, "Every user and account status.") { engine, _ in UsersResult(users: try engine.listUsers()) }
        admin(&registry, "admin.reset", ResetParams.self, "Removes everything, one user's data, or one zone (of one environment).") { engine, params in
            try engine.inEnvironment(CloudEnvironment.named(params.environment, field: "params.environment", fallback: engine.environment)).reset(params)
        }
    }

    /// The whole cloud out to a snapshot and back. They report progress (`progress` events) to
    /// the admin connection that asked.
    private func registerSnapshotAdministration(in registry: inout OperationRegistry) {
        let service = service
        registry.register("admin.exportSnapshot", params: ExportSnapshotParams.self, access: .admin,
                          summary: "The whole cloud as one JSON snapshot (or into params.path); credentials only with includeCredentials.") { params, context in
            let progress = ProgressReporter(context)
            return try service.run(context, checkAccount: false) { engine, _, _ in
                let includeCredentials = params.includeCredentials ?? false
                guard let path = params.path else {
                    return SnapshotExport(snapshot: try engine.exportSnapshot(includeCredentials: includeCredentials, progress: progress).snapshot)
                }
                let (tables, bytes) = try service.files(context).writing(to: path) { output in
                    try engine.writeSnapshot(to: output, includeCredentials: includeCredentials, progress: progress)
                }
                progress.report(phase: "writing", done: 0, total: bytes)
                progress.report(phase: "writing", done: bytes, total: bytes)
                return SnapshotExport(path: path, bytes: bytes, tables: tables)
            }
        }
        registry.register("admin.importSnapshot", params: ImportSnapshotParams.self, access: .admin,
                          summary: "Replaces the whole cloud with a snapshot (inline or from params.path).") { params, context in
            let progress = ProgressReporter(context)
            let files = service.files(context)
            return try service.run(context, checkAccount: false) { engine, _, _ in try Self.importSnapshot(params, into: engine, files: files, progress: progress) }
        }
    }

    /// The cloud's clock, limits, tokens and schema, per environment.
    private func registerEnvironmentAdministration(in registry: inout OperationRegistry) {
        admin(&registry, "admin.setClock", ClockParams.self, "Fixes, advances or releases the clock.") { engine, params in
            if let advance = params.advanceSeconds {
                engine.setClock(engine.now() + advance)
            } else {
                engine.setClock(params.now)
            }
            return ClockResult(now: engine.now(), fixed: params.now != nil || params.advanceSeconds != nil)
        }
        admin(&registry, "admin.setLimits", LimitsParams.self, "Changes limits; returns them all.") { try $0.setLimits($1) }
        admin(&registry, "admin.expireChangeTokens", EnvironmentParams.self, "Every token of the environment issued so far answers changeTokenExpired.") { engine, params in
            try params.engine(engine).expireChangeTokens()
        }
        admin(&registry, "admin.schema", EnvironmentParams.self, "An environment's record types' fields and their types.") { engine, params in
            SchemaResult(recordTypes: try params.engine(engine).fieldSchema.withLock { $0 }.json)
        }
        admin(&registry, "admin.diffSchema", Empty.self, "Development's schema against production's: what a deploy adds, and what it would remove or retype.") { engine, _ in
            engine.diffSchema()
        }
        admin(&registry, "admin.deploySchema", Empty.self, "Adds development's record types and fields to production's (additive only).") { engine, _ in
            try engine.deploySchema()
        }
        admin(&registry, "admin.exportSchema", EnvironmentParams.self, "An environment's schema as text in CloudKit's schema language.") { engine, params in
            try params.engine(engine).exportSchema()
        }
        admin(&registry, "admin.importSchema", ImportSchemaParams.self, "Adds a schema-language text's record types and fields to development's schema (additive only).") { engine, params in
            try engine.importSchema(params.text)
        }
        admin(&registry, "admin.resetDevelopment", Empty.self, "Clears development's data and returns its schema to production's.") { engine, _ in
            try engine.resetDevelopment()
        }
    }

    /// What tests steer: injected faults, held requests and pushes, the request log.
    private func registerTestControls(in registry: inout OperationRegistry) {
        let service = service
        admin(&registry, "admin.injectFault", CloudFault.self, "The next matching user requests fail with a transient error.") { _, fault in
            try service.faults.arm(fault)
        }
        admin(&registry, "admin.clearFaults", Empty.self, "Disarms every injected fault.") { _, _ in service.faults.clear() }
        admin(&registry, "admin.awaitHeldRequests", AwaitHeldParams.self, "Waits until requests are held by hold faults.") { _, params in
            let wanted = params.count ?? 1
            let seconds = params.timeoutSeconds ?? 10
            guard wanted >= 1, (0...FaultInjector.longestHold).contains(seconds) else {
                throw WireError(.invalidArguments, "count must be at least 1 and timeoutSeconds from 0 to \(Int(FaultInjector.longestHold)).")
            }
            let held = service.faults.held.await(wanted, seconds: seconds)
            guard held >= wanted else {
                throw WireError(.timedOut, "\(held) of \(wanted) requests held after \(seconds) s: did a request match the hold fault?",
                                details: ["held": .int(held)])
            }
            return HeldRequestsResult(held: held)
        }
        admin(&registry, "admin.releaseHeldRequests", Empty.self, "Lets every request held by a hold fault run.") { _, _ in
            HeldRequestsResult(released: service.faults.held.releaseAll())
        }
        registry.register("admin.holdPushes", params: Empty.self, access: .admin,
                          summary: "Holds databaseChanged pushes until admin.releasePushes.") { _, _ in
            service.pushes.hold()
        }
        registry.register("admin.releasePushes", params: ReleasePushesParams.self, access: .admin,
                          summary: "Delivers (or drops) the held pushes in commit order and stops holding.") { params, _ in
            guard let events = service.eventHub.withLock({ $0 }) else { throw WireError(.serviceUnavailable, "The service is not started yet.") }
            let engine = try service.engine
            return service.pushes.release(drop: params.drop ?? false, via: events) { engine.receivesPushes($0) }
        }
        registry.register("admin.requestLog", params: RequestLogParams.self, access: .admin, summary: "Recent requests with permission decisions.") { params, _ in
            try service.requestLog().entries(after: params.after, limit: params.limit, form: params.form ?? .both)
        }
    }

    /// admin.importSnapshot: a snapshot inline or in a file, exactly one.
    static func importSnapshot(_ params: ImportSnapshotParams, into engine: CloudEngine, files: WholeFile, progress: ProgressReporter) throws -> ImportResult {
        switch (params.snapshot, params.path) {
        case let (snapshot?, nil): return try engine.importSnapshot(snapshot, progress: progress)
        case let (nil, path?):
            return try SnapshotFile.importFile(path, into: engine, files: files, progress: progress)
        default: throw WireError(.invalidArguments, "admin.importSnapshot takes params.snapshot (the snapshot itself) or params.path (a file holding it), exactly one.")
        }
    }
}
