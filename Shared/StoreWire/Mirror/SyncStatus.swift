import CloudWire
import MeowWire

/// `sync.status`'s params.
public struct SyncStatusParams: Codable, Sendable, Hashable {
    /// Also list `unsent` per store (reads every row: doctor asks, a settle loop does not).
    public var unsent: Bool?

    public init(unsent: Bool? = nil) { self.unsent = unsent }
}

/// `sync.status`: the mirror's state, never waiting for a running step.
public struct SyncStatus: Codable, Sendable, Hashable {
    public var user: String?
    /// False after account.signOut, until account.signIn.
    public var signedIn: Bool
    public var device: String
    /// The cloud environment the mirror syncs with.
    public var environment: CloudEnvironment
    public var mode: MirrorSyncMode
    public var conflictPolicy: MirrorConflictPolicy
    public var stores: [Store]
    /// The running step (`send`, `fetch`, `now`, `share.create`, `automatic`, …), if any.
    public var inFlight: String?
    public var lastError: WireError?
    /// When the last sync step finished without an error (ISO 8601).
    public var lastSuccess: String?
    public var batchLimit: Int
    /// Nothing queued, nothing unqueued, nothing in flight, no deletions held.
    public var quiescent: Bool

    public init(user: String?, signedIn: Bool, device: String, environment: CloudEnvironment, mode: MirrorSyncMode,
                conflictPolicy: MirrorConflictPolicy, stores: [Store], inFlight: String?, lastError: WireError?,
                lastSuccess: String?, batchLimit: Int, quiescent: Bool) {
        (self.user, self.signedIn, self.device, self.environment) = (user, signedIn, device, environment)
        (self.mode, self.conflictPolicy, self.stores) = (mode, conflictPolicy, stores)
        (self.inFlight, self.lastError, self.lastSuccess, self.batchLimit, self.quiescent) = (inFlight, lastError, lastSuccess, batchLimit, quiescent)
    }

    /// Changes waiting to be sent, over both stores.
    public var pending: Int { stores.reduce(0) { $0 + $1.pending } }
    /// Changes held back by a retry-after, over both stores.
    public var deferred: Int { stores.reduce(0) { $0 + $1.deferred } }
}

extension SyncStatus {
    /// One store's queue and bookkeeping.
    public struct Store: Codable, Sendable, Hashable {
        public var store: String
        public var database: DatabaseScope
        public var pending: Int
        /// Pending entries by zone key (`owner/zone`; `none` for an object in no zone yet).
        public var pendingByZone: [String: Int]
        public var deferred: Int
        /// The last history token moved into the queue, and the store's newest token.
        public var exportCursor: Int
        public var historyToken: Int
        /// Local transactions (not the mirror's imports) after the cursor, not yet queued.
        public var unqueuedTransactions: Int
        public var databaseToken: String?
        public var zoneTokens: [String: String]
        /// Shared-store objects outside any share zone: never exported.
        public var unexportable: [String]
        /// Records the server refused at their last send (a production schema without their
        /// field or record type, a field of another type), with its error; they stay queued.
        public var refusedExports: [RefusedExport]
        /// Cloud records the store refused (a value it cannot hold, written by another client):
        /// left out of the import, kept as they were here, tried again when they change.
        public var unimportable: [Unimportable]
        /// Records this device deleted, remembered until a whole fetch after the delete (a move
        /// by another device that beat the delete is then seen, and the delete follows it).
        public var deletesRemembered: Int
        /// A fetch's deletions held for its end: none once a fetch has ended on a round that found
        /// no changes (one whose rounds ran out while zones still changed leaves them to the next).
        public var tombstonesHeld: Int
        /// Relationships of imported objects whose destination record has not arrived yet, each
        /// with how long it has waited.
        public var pendingLinks: [PendingLink]
        /// With `unsent: true`: objects and links neither in the cloud nor queued (at most 100,
        /// objectIDs); none unless something is wrong.
        public var unsent: [String]?

        public init(store: String, database: DatabaseScope, pending: Int, pendingByZone: [String: Int], deferred: Int,
                    exportCursor: Int, historyToken: Int, unqueuedTransactions: Int, databaseToken: String?,
                    zoneTokens: [String: String], unexportable: [String], refusedExports: [RefusedExport],
                    unimportable: [Unimportable], deletesRemembered: Int, tombstonesHeld: Int, pendingLinks: [PendingLink],
                    unsent: [String]?) {
            (self.store, self.database, self.pending, self.pendingByZone, self.deferred) = (store, database, pending, pendingByZone, deferred)
            (self.exportCursor, self.historyToken, self.unqueuedTransactions) = (exportCursor, historyToken, unqueuedTransactions)
            (self.databaseToken, self.zoneTokens, self.unexportable) = (databaseToken, zoneTokens, unexportable)
            (self.refusedExports, self.unimportable, self.deletesRemembered) = (refusedExports, unimportable, deletesRemembered)
            (self.tombstonesHeld, self.pendingLinks, self.unsent) = (tombstonesHeld, pendingLinks, unsent)
        }
    }

    /// A record the server refused with an error of its own at its last send: it stays queued
    /// and is sent again with the next send.
    public struct RefusedExport: Codable, Sendable, Hashable {
        public var recordName: String
        public var entity: String
        public var store: String
        public var code: String
        public var message: String
        /// From the server's error: the record type and field it names, and the environment of a
        /// production schema refusal.
        public var recordType: String?
        public var field: String?
        public var environment: String?

        public init(recordName: String, entity: String, store: String, code: String, message: String,
                    recordType: String? = nil, field: String? = nil, environment: String? = nil) {
            (self.recordName, self.entity, self.store, self.code, self.message) = (recordName, entity, store, code, message)
            (self.recordType, self.field, self.environment) = (recordType, field, environment)
        }
    }

    /// A cloud record the store refused to import, with the store's error.
    public struct Unimportable: Codable, Sendable, Hashable {
        public var recordName: String
        public var entity: String
        /// The zone key (`owner/zone`).
        public var zone: String
        public var recordChangeTag: String?
        public var code: String
        public var message: String

        public init(recordName: String, entity: String, zone: String, recordChangeTag: String?, code: String, message: String) {
            (self.recordName, self.entity, self.zone, self.recordChangeTag, self.code, self.message) = (recordName, entity, zone, recordChangeTag, code, message)
        }
    }

    /// An imported object's relationship waiting for its destination record.
    public struct PendingLink: Codable, Sendable, Hashable {
        public var recordName: String
        public var entity: String
        public var relationship: String
        public var target: String
        public var zone: String?
        public var waitingSeconds: Double

        public init(recordName: String, entity: String, relationship: String, target: String, zone: String?, waitingSeconds: Double) {
            (self.recordName, self.entity, self.relationship, self.target, self.zone, self.waitingSeconds) = (recordName, entity, relationship, target, zone, waitingSeconds)
        }
    }
}
