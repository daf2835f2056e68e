import CloudWire
import FoundationEssentials
import MeowWire
import SQLiteKit
import ServiceRuntime
import Synchronization

/// A change a subscribed connection hears about: one zone of one user's database changed.
public struct ChangeNotice: Codable, Sendable, Hashable {
    public var user: String
    public var scope: DatabaseScope
    public var zoneID: ZoneID
    public var seq: Int64
    public var environment: CloudEnvironment = .development
}

/// The cloud's rules over its SQLite state: users, zones, records, shares, changes.
///
/// Writes of one zone are serialised by its zone lock (`WriteLocks`); a modify decides on a
/// read-only connection while holding that lock and then applies its plan in one transaction
/// on the one writer connection, so two users racing on one zone get CloudKit's answers (a
/// change tag conflict), never a torn write, while other zones' modifies decide in parallel.
/// Fetches run in parallel on read-only connections (file databases in WAL mode), each inside
/// one read transaction so a page and its token come from one snapshot. Decoding and encoding
/// of frames happen outside any lock, on each connection's thread.
///
/// ```swift
/// let engine = try CloudEngine(database: .inMemory())
/// try engine.createUser("alice", credential: "a-secret")
/// _ = try engine.saveZones(caller: "alice", SaveZonesParams(database: .private, zones: [...]))
/// ```
public final class CloudEngine: Sendable {
    /// The environment this engine reads and writes: every zone, change log, schema and
    /// subscription it touches is that environment's (`CloudTransaction.environment`).
    public let environment: CloudEnvironment
    /// What both environments share: the database, its locks, the users, the clock, the limits.
    let core: CloudCore
    /// This environment's field definitions (`FieldSchema`), as committed: read by every modify's decision.
    let fieldSchema: SchemaBox

    private var lock: SleepingLock { core.lock }
    private var cloud: CloudTransaction { core.cloud }
    private var readers: [CloudCore.Reader] { core.readers }
    /// Per-zone serialisation of writes (see WriteLocks), shared by both environments.
    var locks: WriteLocks { core.locks }

    struct Account: Sendable {
        var credential: String
        var status: AccountStatus
    }

    /// The development engine of a cloud in `database`; `inEnvironment(.production)` gives the
    /// production one beside it. `readers` read-only connections serve fetches when the
    /// database is a file.
    public init(database: sending Database, limits: CloudLimits = CloudLimits(), readers: Int = 4) throws {
        core = try CloudCore(database: database, limits: limits, readers: readers)
        environment = .development
        fieldSchema = core.schema(.development)
        try reloadAccounts()
        try ensureDefaultZones()
        try reloadFieldSchema()
    }

    private init(core: CloudCore, environment: CloudEnvironment) {
        self.core = core
        self.environment = environment
        fieldSchema = core.schema(environment)
    }

    /// The engine of `environment` over the same cloud (this one when it is already that).
    public func inEnvironment(_ environment: CloudEnvironment) -> CloudEngine {
        environment == self.environment ? self : CloudEngine(core: core, environment: environment)
    }

    /// Reads both environments' field definitions again (after a reset or a snapshot import replaced them).
    func reloadFieldSchema() throws {
        var schemas: [CloudEnvironment: FieldSchema] = [:]
        try write { state in
            for row in try state.db.query("SELECT environment, record_type, field, type FROM field_types") {
                let recordType = row[1].string ?? "", field = row[2].string ?? ""
                let environment = try CloudEnvironment.stored(row[0].string, in: Self.fieldTypeRow(recordType: recordType, field: field))
                schemas[environment, default: FieldSchema()].define(recordType: recordType, field: field, type: row[3].string ?? "")
            }
        }
        for environment in CloudEnvironment.allCases {
            core.schema(environment).withLock { $0 = schemas[environment] ?? FieldSchema() }
        }
    }

    static func fieldTypeRow(recordType: String, field: String) -> String {
        "The field_types row of record type \(CloudKitNames.quoted(recordType)), field \(CloudKitNames.quoted(field)), column environment,"
    }

    /// Every user has `_defaultZone` in both environments (a cloud written before production
    /// existed, or a snapshot of one, has them in development only).
    func ensureDefaultZones() throws {
        try write { try $0.ensureDefaultZones() }
    }

    /// Called after each committed change with the notices to publish.
    public func onChange(_ body: @escaping @Sendable ([ChangeNotice]) -> Void) {
        core.listener.withLock { $0 = CloudCore.ChangeListener(body) }
    }

    /// Called after each committed change that matched subscriptions, with their notifications.
    func onNotifications(_ body: @escaping @Sendable ([SubscriptionNotice]) -> Void) {
        core.notificationListener.withLock { $0 = CloudCore.NotificationListener(body) }
    }

    // MARK: Clock

    /// Seconds since 1970: the injected time when one is set, else the real clock.
    public func now() -> Double {
        core.fixedClock.withLock { $0 } ?? Date().timeIntervalSince1970
    }

    /// Fixes the clock at `seconds` (nil returns to the real clock).
    public func setClock(_ seconds: Double?) {
        core.fixedClock.withLock { $0 = seconds }
    }

    // MARK: Running work

    /// Runs `body` inside the lock and one transaction; publishes its notices after commit.
    func write<T: Sendable>(_ body: (CloudTransaction) throws -> T) throws -> T {
        let now = now()
        let limits = limits()
        let (value, notices, notifications) = try locked { state throws -> (T, [ChangeNotice], [SubscriptionNotice]) in
            state.now = now
            state.limits = limits
            state.environment = environment
            state.notices = []
            state.recordChanges = []
            state.subscriptionNotices = []
            let startSeq = state.seq
            do {
                let value = try state.db.transaction {
                    let value = try body(state)
                    if state.seq != startSeq {
                        try state.db.execute("UPDATE meta SET value = ? WHERE key = 'seq'", [state.seq])
                    }
                    return value
                }
                return (value, state.notices, state.subscriptionNotices)
            } catch {
                state.notices = []
                state.subscriptionNotices = []
                throw error
            }
        }
        if !notices.isEmpty, let listener = core.listener.withLock({ $0 }) { listener.body(notices) }
        if !notifications.isEmpty, let listener = core.notificationListener.withLock({ $0 }) { listener.body(notifications) }
        return value
    }

    /// Runs a read in one read transaction on a read-only connection (or, in memory, under the
    /// writer's lock). Must not write.
    func read<T: Sendable>(_ body: (CloudTransaction) throws -> T) throws -> T {
        let now = now()
        let limits = limits()
        guard !readers.isEmpty else {
            return try locked { state throws -> T in
                state.now = now
                state.limits = limits
                state.environment = environment
                return try body(state)
            }
        }
        let reader = readers[core.nextReader.add(1, ordering: .relaxed).oldValue % readers.count]
        return try reader.lock.withLock { () throws -> T in
            let state = reader.state
            state.now = now
            state.limits = limits
            state.environment = environment
            return try state.db.readTransaction { try body(state) }
        }
    }

    /// The limits in force.
    public func limits() -> CloudLimits {
        core.currentLimits.withLock { $0 }
    }

    func setLimits(_ limits: CloudLimits) {
        core.currentLimits.withLock { $0 = limits }
    }

    /// The one way to the database: inside the lock.
    func locked<T: Sendable>(_ body: (CloudTransaction) throws -> T) throws -> T {
        try lock.withLock { () throws -> T in try body(cloud) }
    }

    // MARK: Accounts

    func reloadAccounts() throws {
        let rows = try locked { state throws -> [Row] in
            try state.db.query("SELECT name, credential, status FROM users")
        }
        var loaded: [String: Account] = [:]
        for row in rows {
            let name = row["name"].string ?? ""
            loaded[name] = Account(credential: row["credential"].string ?? "",
                                   status: try .stored(row["status"].string, in: Self.userRow(name)))
        }
        core.accounts.withLock { $0 = loaded }
    }

    /// The user whose credential this is, or nil.
    public func user(forCredential credential: String) -> String? {
        core.accounts.withLock { accounts in accounts.first { $0.value.credential == credential }?.key }
    }

    /// Every user's credential (a snapshot import fills in the ones it leaves out).
    func credentialsByUser() -> [String: String] {
        core.accounts.withLock { $0.mapValues(\.credential) }
    }

    public func accountStatus(of user: String) -> AccountStatus? {
        core.accounts.withLock { $0[user]?.status }
    }

    /// Whether `user`'s open connections get databaseChanged pushes: not once the account is
    /// noAccount or the user is gone (a temporarily unavailable account keeps them: its devices
    /// fetch when it is back).
    public func receivesPushes(_ user: String) -> Bool {
        switch accountStatus(of: user) {
        case .available, .temporarilyUnavailable: return true
        case .noAccount, nil: return false
        }
    }

    /// Throws CloudKit's error for a user whose account is not available.
    public func requireAvailableAccount(_ user: String) throws {
        switch accountStatus(of: user) {
        case .available: return
        case .noAccount:
            throw WireError(.notAuthenticated, "User '\(user)' has no iCloud account (account status noAccount).",
                            details: ["user": .string(user), "accountStatus": "noAccount"])
        case .temporarilyUnavailable:
            throw WireError(.accountTemporarilyUnavailable, "User '\(user)''s account is temporarily unavailable; retry later.",
                            details: ["user": .string(user), "accountStatus": "temporarilyUnavailable"])
        case nil:
            throw WireError(.notAuthenticated, "User '\(user)' no longer exists.", details: ["user": .string(user)])
        }
    }

    /// Creates a user with a credential and a private database holding `_defaultZone`.
    @discardableResult
    public func createUser(_ name: String, credential: String) throws -> UserSummary {
        guard !name.isEmpty, !name.hasPrefix("_"), !name.contains("/"), !credential.isEmpty else {
            throw WireError(.invalidArguments, "A user needs a non-empty name that does not start with '_' or contain '/' (reserved for \(ZoneID.defaultOwner), the admin and error keys) and a non-empty credential.")
        }
        try write { state in
            if try state.db.scalar("SELECT 1 FROM users WHERE name = ?", [name]) != nil {
                throw WireError(.constraintViolation, "User '\(name)' already exists.", details: ["user": .string(name)])
            }
            if try state.db.scalar("SELECT 1 FROM users WHERE credential = ?", [credential]) != nil {
                throw WireError(.constraintViolation, "Another user already has this credential.", details: ["user": .string(name)])
            }
            try state.db.execute("INSERT INTO users(name, credential, status, created) VALUES (?, ?, '\(AccountStatus.available.rawValue)', ?)",
                                 [name, credential, state.now])
            for environment in CloudEnvironment.allCases {
                _ = try state.ensureZone(owner: name, name: ZoneID.defaultZoneName, environment: environment)
            }
        }
        core.accounts.withLock { $0[name] = Account(credential: credential, status: .available) }
        return UserSummary(user: name, accountStatus: .available)
    }

    public func setAccountStatus(_ user: String, _ status: AccountStatus) throws -> UserSummary {
        try write { state in
            try state.db.execute("UPDATE users SET status = ? WHERE name = ?", [status.rawValue, user])
            if state.db.changes == 0 { throw WireError(.unknownItem, "No user named '\(user)'.", details: ["user": .string(user)]) }
        }
        core.accounts.withLock { $0[user]?.status = status }
        return UserSummary(user: user, accountStatus: status)
    }

    public func listUsers() throws -> [UserSummary] {
        try read { state in
            try state.db.query("SELECT name, status FROM users ORDER BY name").map {
                let name = $0["name"].string ?? ""
                return UserSummary(user: name, accountStatus: try .stored($0["status"].string, in: Self.userRow(name)))
            }
        }
    }

    static func userRow(_ name: String) -> String {
        "The users row of user \(CloudKitNames.quoted(name)), column status,"
    }
}

public struct UserSummary: Codable, Sendable, Hashable {
    public var user: String
    public var accountStatus: AccountStatus
}

/// The context one locked request runs in: the database, the sequence counter, the request's
/// clock and environment, and the notices it collects to publish once it commits.
/// @unchecked Sendable: CloudEngine only reaches it inside `locked`, one thread at a time.
final class CloudTransaction: @unchecked Sendable {
    // Its stored properties skip the runtime's exclusivity checks: a records.modify reads and
    // writes them for every record, and only the request holding the lock touches them.
    let db: Database
    @exclusivity(unchecked) var seq: Int64
    @exclusivity(unchecked) var limits: CloudLimits
    @exclusivity(unchecked) var now: Double = 0
    /// The environment of the request running now (set by `CloudEngine.read`/`write`).
    @exclusivity(unchecked) var environment: CloudEnvironment = .development
    @exclusivity(unchecked) var notices: [ChangeNotice] = []
    /// The request's record changes not yet matched against subscriptions (`touchZone` matches them).
    @exclusivity(unchecked) var recordChanges: [RecordChange] = []
    /// Subscription notifications of the request, published after it commits.
    @exclusivity(unchecked) var subscriptionNotices: [SubscriptionNotice] = []
    let encoder = JSONTextEncoder(options: .sortedKeys)
    let decoder = JSONValueDecoder()

    init(db: Database, seq: Int64, limits: CloudLimits) {
        self.db = db
        self.seq = seq
        self.limits = limits
    }

    func nextSeq() -> Int64 {
        seq += 1
        return seq
    }

    /// Makes the writer's change tags (`ChangeTags`); only the writer's state uses it.
    @exclusivity(unchecked) private var tags = ChangeTags()

    /// A new change tag: opaque and unguessable (`ChangeTags`), never the write sequence.
    func newTag() -> String { tags.make() }
}
