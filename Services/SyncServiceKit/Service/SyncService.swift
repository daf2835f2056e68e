#if canImport(Glibc)
import CloudWire
import Glibc
#endif
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import Synchronization

/// Sync-specific settings, from the command line.
public struct SyncSettings: Sendable {
    /// The credential whose hello makes a connection the admin; nil disables admin ops. At
    /// least `minimumAdminCredentialLength` characters (the command line refuses shorter ones).
    public var adminCredential: String?
    /// A JSON file of users to create at start-up: {"users":[{"user":…,"credential":…,"accountStatus":…}]}.
    public var usersFile: String?
    /// Appends every request to this file as a JSON line.
    public var requestLogFile: String?
    /// Faults to arm at start-up: {"faults": [CloudFault, …]}.
    public var faultsFile: String?
    public var limits = CloudLimits()
    public init() {}
}

/// One iCloud container as the server sees it: every user's private and shared databases.
public final class SyncService: ServiceDefinition {
    public let name = "sync-service"
    public let version = MeowVersion.current
    public static let versionString = MeowVersion.current
    public static let adminUser = "_admin"
    /// The shortest admin credential start-up accepts: the admin reads and replaces the whole cloud.
    public static let minimumAdminCredentialLength = 16
    public static let databaseChangesTopic = "databaseChanges"
    /// Subscriptions' notifications (`notification` events).
    public static let notificationsTopic = "notifications"
    public let configuration: ServiceConfiguration
    public let settings: SyncSettings
    private let engineBox = Mutex<CloudEngine?>(nil)
    private let requestLogBox = Mutex<RequestLog?>(nil)
    private let logger = Logger(label: "sync-service")
    /// Transient failures armed by `admin.injectFault`.
    public let faults = FaultInjector()
    /// databaseChanged pushes, held and released by admin ops.
    let pushes = PushGate()
    let eventHub = Mutex<EventHub?>(nil)

    public init(configuration: ServiceConfiguration, settings: SyncSettings = SyncSettings()) {
        self.configuration = configuration
        self.settings = settings
    }

    public static let commandLine = CommandLineParser(
        command: "sync-service",
        summary: "a local CloudKit: private and shared databases for many users, over a Unix socket",
        options: ServiceConfiguration.commandLineOptions + [
            .init("faults", value: "FILE", help: "Arm injected faults at start-up from FILE: {\"faults\": [{\"op\", \"user\", \"zone\", \"recordType\", \"effect\", \"code\", \"probability\", \"seed\", …}]} (see admin.injectFault)."),
            .init("admin-credential", value: "SECRET", help: "Credential whose hello makes a connection the admin (admin.* ops), at least 16 characters. Without it (or --admin-credential-file, or $MEOW_ADMIN_CREDENTIAL) admin ops are refused. A command line is visible to every local user: prefer the file."),
            .init("admin-credential-file", value: "FILE", help: "Read the admin credential from FILE (mode 0600 or stricter; one trailing newline ignored)."),
            .init("users", value: "FILE", help: "JSON file of users created at start-up: {\"users\":[{\"user\":\"alice\",\"credential\":\"…\"}]}."),
            .init("request-log", value: "FILE", help: "Append every request (user, database, zone, op, result, permission reasons) to FILE as JSON lines (created 0600)."),
            .init("retention", value: "SECONDS", help: "History kept for change tokens (default 2592000); older tokens get changeTokenExpired."),
            .init("max-items", value: "N", help: "Items per records.modify request (default 400)."),
            .init("max-request-bytes", value: "N", help: "Record bytes per records.modify request (default 2097152)."),
            .init("max-record-bytes", value: "N", help: "Bytes per record, asset fields aside (default 1048576)."),
            .init("max-asset-bytes", value: "N", help: "Bytes of one asset field's data (default 1048576)."),
            .init("max-participants", value: "N", help: "Participants per share (default 100)."),
        ])

    /// Reads the sync-specific options (exits 64 with a message on a mistake).
    public static func settings(from options: ParsedOptions) throws(UsageError) -> SyncSettings {
        var settings = SyncSettings()
        do {
            settings.adminCredential = try CredentialFile.resolve(value: options.value("admin-credential"), file: options.value("admin-credential-file"),
                                                                  environment: "MEOW_ADMIN_CREDENTIAL", valueOption: "admin-credential", fileOption: "admin-credential-file")
        } catch {
            throw UsageError(error.message)
        }
        if let admin = settings.adminCredential, admin.count < minimumAdminCredentialLength {
            throw UsageError("The admin credential is \(admin.isEmpty ? "empty" : "\(admin.count) characters"); it must be at least \(minimumAdminCredentialLength) characters (it opens every user's data). Generate one, e.g. with: head -c 18 /dev/urandom | base64")
        }
        settings.faultsFile = options.value("faults")
        settings.usersFile = options.value("users")
        settings.requestLogFile = options.value("request-log")
        settings.limits.retentionSeconds = try options.int("retention", default: settings.limits.retentionSeconds, range: 0...(1 << 40))
        settings.limits.maxItemsPerRequest = try options.int("max-items", default: settings.limits.maxItemsPerRequest, range: 1...1_000_000)
        settings.limits.maxRequestBytes = try options.int("max-request-bytes", default: settings.limits.maxRequestBytes, range: 1...(1 << 31))
        settings.limits.maxRecordBytes = try options.int("max-record-bytes", default: settings.limits.maxRecordBytes, range: 1...(1 << 31))
        settings.limits.maxAssetBytes = try options.int("max-asset-bytes", default: settings.limits.maxAssetBytes, range: 1...(1 << 31))
        settings.limits.maxParticipants = try options.int("max-participants", default: settings.limits.maxParticipants, range: 1...100_000)
        return settings
    }

    /// Like `settings(from:)`, exiting 64 with the message on a mistake.
    public static func settingsOrExit(_ options: ParsedOptions) -> SyncSettings {
        do {
            return try settings(from: options)
        } catch {
            ServiceMain.printError("sync-service: \(error.message)")
            exit(64)
        }
    }

    public var features: [String] { ["users", "zones", "records", "changes", "shares", "subscriptions", "admin"] }
    public var topics: [String] { [Self.databaseChangesTopic, Self.notificationsTopic] }

    public func start(events: EventHub) throws {
        let database: Database
        switch configuration.persistence {
        case .inMemory:
            database = try Database.inMemory()
        case let .dataDirectory(dir):
            do { try PrivateDirectory.make(dir) } catch {
                throw WireError(.internalError, "Cannot create the data directory \(dir): \(error.message)")
            }
            database = try Database(path: "\(dir)/cloud.sqlite")
            // 64 MiB of page cache (SQLite's default is 2 MiB): a batch's index lookups
            // otherwise re-read pages from the OS with a pread each.
            try database.execute("PRAGMA cache_size = -65536")
            database.checkpointInBackground()
        }
        let engine = try CloudEngine(database: database, limits: settings.limits)
        if let file = settings.usersFile { try Self.loadUsers(file: file, into: engine) }
        if let file = settings.faultsFile { try faults.arm(file: file) }
        eventHub.withLock { $0 = events }
        engine.onChange { [pushes, weak engine] notices in
            // Changes are reported on the thread of the request that made them.
            let origin = RequestOrigin.current
            for notice in notices {
                let event = DatabaseChangedEvent(scope: notice.scope, zoneID: notice.zoneID.presented(to: notice.user), seq: notice.seq)
                guard let data = try? JSONValue(encoding: event) else { continue }
                pushes.publish(.init(user: notice.user, environment: notice.environment, topic: Self.databaseChangesTopic, name: "databaseChanged",
                                     data: data, origin: origin), via: events) {
                    engine?.receivesPushes($0) == true
                }
            }
        }
        engine.onNotifications { [pushes, weak engine] notices in
            let origin = RequestOrigin.current
            for notice in notices {
                guard let data = try? JSONValue(encoding: notice.notification) else { continue }
                pushes.publish(.init(user: notice.user, environment: notice.environment, topic: Self.notificationsTopic, name: "notification",
                                     data: data, origin: origin), via: events) {
                    engine?.receivesPushes($0) == true
                }
            }
        }
        let requestLog = try RequestLog(path: settings.requestLogFile)
        engineBox.withLock { $0 = engine }
        requestLogBox.withLock { $0 = requestLog }
        logger.info("cloud opened", ["users": .int((try? engine.listUsers().count) ?? 0)])
    }

    /// The engine, once `start` opened it (tests may use it directly).
    public var engine: CloudEngine {
        get throws {
            guard let engine = engineBox.withLock({ $0 }) else { throw WireError(.serviceUnavailable, "The cloud is not open yet.") }
            return engine
        }
    }

    static func loadUsers(file: String, into engine: CloudEngine) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw WireError(.invalidArguments, "Cannot read the users file \(file).")
        }
        struct UsersFile: Decodable {
            struct User: Decodable { var user: String; var credential: String; var accountStatus: AccountStatus? }
            var users: [User]
        }
        let parsed: UsersFile
        do { parsed = try JSONValueDecoder().decode(UsersFile.self, from: [UInt8](data)) } catch {
            let problem = (error as? DecodingError)?.fileProblem ?? "\(error)"
            throw WireError(.invalidArguments, "The users file \(file) is not {\"users\": [{\"user\", \"credential\"}, ...]}: \(problem)")
        }
        for entry in parsed.users {
            if engine.accountStatus(of: entry.user) == nil { try engine.createUser(entry.user, credential: entry.credential) }
            if let status = entry.accountStatus { _ = try engine.setAccountStatus(entry.user, status) }
        }
    }

    /// A connection works in development unless its hello asked for production.
    public func helloEnvironment(_ requested: String?) throws -> String? {
        try CloudEnvironment.named(requested, field: "params.environment").rawValue
    }

    /// The environment a connection's hello chose. Hello keeps only a spelling
    /// `helloEnvironment` accepted; none kept (no hello yet) is development, as `named` says.
    static func environment(of connection: ConnectionHandle) throws(WireError) -> CloudEnvironment {
        try CloudEnvironment.named(connection.environment, field: "params.environment")
    }

    public func authenticate(credential: String?, connection: ConnectionHandle) throws -> Principal? {
        guard let credential else { return nil }
        if let admin = settings.adminCredential, credential == admin { return Principal(user: Self.adminUser, isAdmin: true) }
        guard let user = try engine.user(forCredential: credential) else {
            throw WireError(.notAuthenticated, "The credential does not belong to any user of this sync-service.")
        }
        return Principal(user: user)
    }

    public func healthChecks() -> [HealthCheck] {
        let open = engineBox.withLock { $0 != nil }
        return [HealthCheck(name: "cloud", ok: open, detail: open ? "cloud database open" : "cloud database not open")]
    }

    public func infoDetails() -> [String: JSONValue] {
        var details: [String: JSONValue] = ["adminEnabled": .bool(settings.adminCredential != nil)]
        if case let .dataDirectory(dir) = configuration.persistence { details["database"] = .string("\(dir)/cloud.sqlite") }
        if let limits = try? JSONValue(encoding: engineBox.withLock({ $0 })?.limits()) { details["limits"] = limits }
        return details
    }

    public func registerOperations(in registry: inout OperationRegistry) {
        SyncOperations(service: self).register(in: &registry)
    }

    /// The file rules for a request's peer (`WholeFile`): the request log is the service's own too.
    func files(_ context: RequestContext) -> WholeFile {
        configuration.files(for: context.connection.peer, service: "sync-service", code: .invalidArguments, alsoOwn: [settings.requestLogFile].compactMap { $0 })
    }

    /// Runs one request through the engine and the request log.
    /// `target` is what the request touches, for faults naming a zone or record type.
    func run<R>(_ context: RequestContext, checkAccount: Bool, target: () -> FaultTarget = { FaultTarget() },
                _ body: (CloudEngine, String, RequestTrace) throws -> R) throws -> R {
        let user = context.connection.principal?.user
        let trace = RequestTrace()
        trace.writesKept = requestLogBox.withLock { $0 }?.writesKept
        trace.decisionsKept = trace.writesKept
        let started = ContinuousClock.now
        func log(_ code: String, _ engine: CloudEngine) {
            let elapsed = ContinuousClock.now - started
            let exact = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            let milliseconds = (exact * 1000).rounded() / 1000  // to the microsecond
            requestLogBox.withLock { $0 }?.record(connection: context.connection.id, client: context.connection.clientName, user: user, op: context.op,
                                                  trace: trace, code: code, time: engine.now(), milliseconds: milliseconds)
        }
        let engine = try engine.inEnvironment(Self.environment(of: context.connection))
        do {
            if checkAccount, context.connection.principal?.isAdmin == true {
                throw WireError(.permissionFailure, "The admin credential only opens admin.* ops; say hello with a user's credential for '\(context.op)'.")
            }
            if checkAccount, let user { try engine.requireAvailableAccount(user) }
            let effect = checkAccount ? faults.take(op: context.op, user: user, target: target) : nil
            if let latency = effect?.fault.latencyMilliseconds, latency > 0 { usleep(UInt32(latency) * 1000) }
            if effect?.kind == .hold {
                // Before any engine lock is taken: other connections are served meanwhile.
                let released = faults.held.hold(seconds: FaultInjector.longestHold)
                trace.decide(true, released ? "injected hold: released" : "injected hold: ran after \(Int(FaultInjector.longestHold)) s unreleased")
            }
            if effect?.kind == .holdBeforeCommit {
                let held = faults.held
                trace.pauseBeforeCommit = { [unowned trace] in
                    let released = held.hold(seconds: FaultInjector.longestHold)
                    trace.decide(true, released ? "injected hold before the commit: released"
                                                : "injected hold before the commit: ran after \(Int(FaultInjector.longestHold)) s unreleased")
                }
            }
            if let effect {
                switch effect.kind {
                case .error where effect.fault.afterApplying != true:
                    trace.decide(false, "injected fault \(effect.fault.code?.rawValue ?? "error")")
                    throw FaultInjector.error(for: effect.fault, op: context.op)
                case .dropBeforeCommit:
                    trace.decide(false, "injected fault: connection dropped before the commit")
                    context.connection.disconnect()
                    throw FaultInjector.error(for: effect.fault, op: context.op)
                default: break
                }
            }
            let result = try body(engine, user ?? "", trace)
            CrashPoint.reached("sync.afterCommit")
            if let effect {
                switch effect.kind {
                case .error:
                    trace.decide(false, "injected fault \(effect.fault.code?.rawValue ?? "error") after applying")
                    throw FaultInjector.error(for: effect.fault, op: context.op)
                case .dropAfterCommit:
                    // serverResponseLost as a client meets it: applied, and no answer at all.
                    trace.decide(false, "injected fault: connection dropped after the commit")
                    context.connection.disconnect()
                case .partialFrame:
                    trace.decide(false, "injected fault: half a reply frame, then the connection closed")
                    let frame = FrameEncoder.frame(Array(#"{"id":\#(context.requestID),"ok":true,"result":{"injected":"partialFrame"}}"#.utf8))
                    context.connection.writeRawAndDisconnect(Array(frame.prefix(frame.count / 2)))
                default: break
                }
            }
            log("ok", engine)
            return result
        } catch {
            let code = ServiceError.wire(of: error)?.code.rawValue ?? "internalError"
            log(code, engine)
            throw error
        }
    }

    func requestLog() throws -> RequestLog {
        guard let log = requestLogBox.withLock({ $0 }) else { throw WireError(.serviceUnavailable, "The request log is not open yet.") }
        return log
    }
}

/// The `databaseChanged` event: a hint that a zone of one of the user's databases (in the
/// connection's environment) changed.
public struct DatabaseChangedEvent: Codable, Sendable {
    public var scope: DatabaseScope
    public var zoneID: ZoneID
    public var seq: Int64
}
