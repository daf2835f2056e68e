/// `sync.status`: the mirror's state, never waiting for a running step.
public struct SyncStatus: Decodable, Sendable {
    public struct Store: Decodable, Sendable {
        public var store: String
        public var database: String
        public var pending: Int
        public var deferred: Int
        public var pendingByZone: [String: Int]?
        public var unexportable: [String]?
        public var unimportable: [JSONValue]?
        public var pendingLinks: [JSONValue]?
        public var tombstonesHeld: Int?
    }

    public var user: String?
    public var signedIn: Bool
    public var device: String?
    /// `manual` or `automatic`.
    public var mode: String
    /// The running step (`send`, `fetch`, `now`, `share.create`, `automatic`, …), if any.
    public var inFlight: String?
    public var lastError: WireError?
    /// Nothing queued, nothing unqueued, nothing in flight, no deletions held.
    public var quiescent: Bool
    public var stores: [Store]

    /// Changes waiting to be sent, over both stores.
    public var pending: Int { stores.reduce(0) { $0 + $1.pending } }
    /// Changes held back by a retry-after, over both stores.
    public var deferred: Int { stores.reduce(0) { $0 + $1.deferred } }
}

/// `share.create`'s answer.
public struct ShareCreation: Decodable, Sendable {
    /// The new share zone (`com.apple.coredata.cloudkit.share.<UUID>`).
    public var zoneName: String
    public var rootRecordName: String
    public var movedRecords: Int
    public var pendingRecords: Int
    /// A cloud error that stopped the move's send (the share exists; the next send moves the rest).
    public var sendError: WireError?
    public var share: CloudRecord
}

/// `share.accept`'s answer: the share, and the fetch that brought its records.
public struct ShareAcceptance: Decodable, Sendable {
    public var zoneName: String
    public var ownerName: String
    public var share: CloudRecord
    public var fetch: SyncFetchResult
}
