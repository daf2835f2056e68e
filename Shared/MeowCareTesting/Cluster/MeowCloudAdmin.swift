/// The cloud's admin ops (protocol-sync-service.md, "Admin ops"): users, faults, holds, the
/// clock, limits, resets, snapshots, the schema and the request log.
///
/// ```swift
/// try await admin.injectFault(CloudFault(op: "records.modify", user: "olivia", effect: .hold))
/// async let sent = device.sync.send()
/// try await admin.awaitHeldRequests(count: 1)
/// // … make the move that must happen meanwhile …
/// try await admin.releaseHeldRequests()
/// ```
public struct MeowCloudAdmin: Sendable {
    let connection: TracedConnection

    /// Any admin op, its params and result as JSON.
    @discardableResult
    public func call(_ op: String, _ params: [String: JSONValue] = [:]) async throws(MeowCareError) -> JSONValue {
        try await connection.call(op, params)
    }

    /// `admin.createUser`.
    @discardableResult
    public func createUser(_ user: String, credential: String) async throws(MeowCareError) -> JSONValue {
        try await call("admin.createUser", ["user": .string(user), "credential": .string(credential)])
    }

    /// `admin.setAccountStatus`: `available`, `noAccount` or `temporarilyUnavailable`.
    @discardableResult
    public func setAccountStatus(_ user: String, _ status: String) async throws(MeowCareError) -> JSONValue {
        try await call("admin.setAccountStatus", ["user": .string(user), "status": .string(status)])
    }

    /// `admin.listUsers`: each user and account status.
    public func listUsers() async throws(MeowCareError) -> [JSONValue] {
        try await call("admin.listUsers")["users"]?.arrayValue ?? []
    }

    /// `admin.injectFault`: the faults armed now.
    @discardableResult
    public func injectFault(_ fault: CloudFault) async throws(MeowCareError) -> [JSONValue] {
        let params: JSONValue
        do { params = try JSONValue(encoding: fault) } catch {
            throw MeowCareError(.invalidArguments, "Could not encode the fault: \(error)", op: "admin.injectFault", service: "cloud")
        }
        return try await call("admin.injectFault", params.objectValue ?? [:])["faults"]?.arrayValue ?? []
    }

    /// `admin.clearFaults`.
    public func clearFaults() async throws(MeowCareError) { _ = try await call("admin.clearFaults") }

    /// `admin.awaitHeldRequests`: returns once at least `count` requests are held (`timedOut` otherwise).
    @discardableResult
    public func awaitHeldRequests(count: Int = 1, timeoutSeconds: Double = 10) async throws(MeowCareError) -> Int {
        try await call("admin.awaitHeldRequests", ["count": .int(count), "timeoutSeconds": .double(timeoutSeconds)])["held"]?.intValue ?? 0
    }

    /// `admin.releaseHeldRequests`: how many were released.
    @discardableResult
    public func releaseHeldRequests() async throws(MeowCareError) -> Int {
        try await call("admin.releaseHeldRequests")["released"]?.intValue ?? 0
    }

    /// `admin.holdPushes`: `databaseChanged` events are kept until `releasePushes`.
    @discardableResult
    public func holdPushes() async throws(MeowCareError) -> JSONValue { try await call("admin.holdPushes") }

    /// `admin.releasePushes`: sends the held events in commit order, or drops them.
    @discardableResult
    public func releasePushes(drop: Bool = false) async throws(MeowCareError) -> JSONValue {
        try await call("admin.releasePushes", ["drop": .bool(drop)])
    }

    /// `admin.setClock`: fixes the cloud's clock at `now` (seconds since 1970), or back to the system's with nil.
    @discardableResult
    public func setClock(now: Double?) async throws(MeowCareError) -> ClockState {
        try await connection.call("admin.setClock", ["now": now.map { .double($0) } ?? .null], as: ClockState.self)
    }

    /// `admin.setClock` with `advanceSeconds`.
    @discardableResult
    public func advanceClock(by seconds: Double) async throws(MeowCareError) -> ClockState {
        try await connection.call("admin.setClock", ["advanceSeconds": .double(seconds)], as: ClockState.self)
    }

    /// `admin.setLimits` (`maxItemsPerRequest`, `maxRequestBytes`, `maxRecordBytes`,
    /// `maxParticipants`, `maxZonesPerUser`, `retentionSeconds`, `defaultFetchLimit`): all limits.
    @discardableResult
    public func setLimits(_ limits: [String: Int]) async throws(MeowCareError) -> [String: Int] {
        try await call("admin.setLimits", limits.mapValues { .int($0) }).objectValue?.compactMapValues(\.intValue) ?? [:]
    }

    /// `admin.expireChangeTokens`: every token issued so far answers `changeTokenExpired`.
    public func expireChangeTokens() async throws(MeowCareError) { _ = try await call("admin.expireChangeTokens") }

    /// `admin.schema`: record type → field → CloudKit type name.
    public func schema() async throws(MeowCareError) -> [String: [String: String]] {
        (try await call("admin.schema")["recordTypes"]?.objectValue ?? [:]).mapValues { $0.objectValue?.compactMapValues(\.stringValue) ?? [:] }
    }

    /// `admin.exportSchema`: an environment's schema in CloudKit's schema language.
    public func exportSchema(environment: CloudEnvironment = .development) async throws(MeowCareError) -> String {
        try await call("admin.exportSchema", ["environment": .string(environment.rawValue)])["text"]?.stringValue ?? ""
    }

    /// `admin.importSchema`: schema-language text added to development's schema (`added`, `newRecordTypes`, `unchanged`).
    @discardableResult
    public func importSchema(_ text: String) async throws(MeowCareError) -> JSONValue {
        try await call("admin.importSchema", ["text": .string(text)])
    }

    /// `admin.diffSchema`: development against production (`newRecordTypes`, `added`, `removed`, `retyped`, `deployable`, `identical`).
    public func diffSchema() async throws(MeowCareError) -> JSONValue { try await call("admin.diffSchema") }

    /// `admin.deploySchema`: development's record types and fields added to production's (`deployed`, `newRecordTypes`).
    @discardableResult
    public func deploySchema() async throws(MeowCareError) -> JSONValue { try await call("admin.deploySchema") }

    /// `admin.resetDevelopment`: development's data cleared, its schema production's again.
    @discardableResult
    public func resetDevelopment() async throws(MeowCareError) -> JSONValue { try await call("admin.resetDevelopment") }

    /// What `admin.reset` clears.
    public enum ResetScope: Sendable {
        case all
        case user(String)
        case zone(ZoneID)
        case encryptedData(user: String)
    }

    /// `admin.reset`: the number of zones removed.
    @discardableResult
    public func reset(_ scope: ResetScope) async throws(MeowCareError) -> Int {
        let params: [String: JSONValue]
        switch scope {
        case .all: params = ["scope": "all"]
        case let .user(user): params = ["scope": "user", "user": .string(user)]
        case let .zone(zone): params = ["scope": "zone", "zoneID": ["zoneName": .string(zone.zoneName), "ownerName": .string(zone.ownerName)]]
        case let .encryptedData(user): params = ["scope": "encryptedData", "user": .string(user)]
        }
        return try await call("admin.reset", params)["zonesRemoved"]?.intValue ?? 0
    }

    /// `admin.exportSnapshot`: the whole cloud as JSON (or written to `path`, answering its size).
    public func exportSnapshot(includeCredentials: Bool = false, path: String? = nil) async throws(MeowCareError) -> JSONValue {
        var params: [String: JSONValue] = ["includeCredentials": .bool(includeCredentials)]
        if let path { params["path"] = .string(path) }
        return try await call("admin.exportSnapshot", params)
    }

    /// `admin.importSnapshot`: replaces everything with `snapshot` (an export's `snapshot` value).
    @discardableResult
    public func importSnapshot(_ snapshot: JSONValue) async throws(MeowCareError) -> JSONValue {
        try await call("admin.importSnapshot", ["snapshot": snapshot])
    }

    /// `admin.importSnapshot` from a file an export wrote.
    @discardableResult
    public func importSnapshot(path: String) async throws(MeowCareError) -> JSONValue {
        try await call("admin.importSnapshot", ["path": .string(path)])
    }

    /// `admin.requestLog`: the request log's entries after `after` (the last 10,000 requests).
    public func requestLog(after: Int? = nil, limit: Int? = nil) async throws(MeowCareError) -> [JSONValue] {
        var params: [String: JSONValue] = ["form": "entries"]
        if let after { params["after"] = .int(after) }
        if let limit { params["limit"] = .int(limit) }
        return try await call("admin.requestLog", params)["entries"]?.arrayValue ?? []
    }

    /// The request log as JSON lines (one request per line), as `--request-log` writes it.
    public func requestLogText() async throws(MeowCareError) -> String {
        try await call("admin.requestLog", ["form": "jsonLines"])["jsonLines"]?.stringValue ?? ""
    }
}
