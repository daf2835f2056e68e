/// `sync.send`'s answer: what one send of both stores' queues did.
public struct SyncSendResult: Codable, Sendable, Hashable {
    public var saved = 0
    public var deleted = 0
    /// Entries merged after serverRecordChanged / serverRejectedRequest.
    public var conflictsResolved = 0
    /// Local changes the server refused (permissionFailure) and the device undid.
    public var reverted = 0
    /// Entries dropped without a request (their row is gone, or never reached the server).
    public var dropped = 0
    /// Records the server refused with an error of their own (a production schema without
    /// their field, a field of another type): they stay queued, listed in `sync.status`.
    public var refused = 0
    /// Entries waiting for a retry-after moment.
    public var deferred = 0
    public var requests = 0
    public var pending = 0
    /// Seconds until the earliest deferred entry may be sent.
    public var retryAfterSeconds: Double?

    public init() {}
}

/// `sync.fetch`'s answer (and `share.leave`'s): what one fetch of both databases did.
public struct SyncFetchResult: Codable, Sendable, Hashable {
    public var changedRecords = 0
    public var deletedRecords = 0
    /// Records whose unsent local edits were merged with the fetched copy.
    public var merged = 0
    public var pages = 0
    /// `owner/zone`, prefixed `purged:` for purged zones.
    public var zonesRemoved: [String] = []
    public var zonesReset: [String] = []
    public var tokensExpired = 0

    public init() {}
}

/// `sync.now`'s answer: a send, then a fetch.
public struct SyncNowResult: Codable, Sendable, Hashable {
    public var send: SyncSendResult
    public var fetch: SyncFetchResult

    public init(send: SyncSendResult, fetch: SyncFetchResult) {
        self.send = send
        self.fetch = fetch
    }

    /// Whether the step moved anything in either direction (what a settle loop repeats on).
    public var changedAnything: Bool {
        send.requests > 0 || send.saved + send.deleted + send.conflictsResolved + send.reverted + send.dropped > 0
            || fetch.changedRecords + fetch.deletedRecords + fetch.merged > 0 || !fetch.zonesRemoved.isEmpty || !fetch.zonesReset.isEmpty
    }
}

/// `sync.initializeSchema`'s answer: every record type's fields as CloudKit names their types.
public struct SchemaInitialization: Codable, Sendable, Hashable {
    /// Record type → field → CloudKit's type name, as the representative records define them.
    public var recordTypes: [String: [String: String]]
    /// Representative records saved (and deleted again); 0 for a dry run.
    public var uploaded: Int
    public var dryRun: Bool

    public init(recordTypes: [String: [String: String]], uploaded: Int, dryRun: Bool) {
        (self.recordTypes, self.uploaded, self.dryRun) = (recordTypes, uploaded, dryRun)
    }
}
