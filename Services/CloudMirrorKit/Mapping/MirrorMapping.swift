import CloudWire
import MeowWire
import StoreWire

/// What the engine asks of the mapping: everything about what a record means, never about how
/// it travels. A store comes inside the engine's turn of the store lock (or, for `buildBatches`,
/// as a reading snapshot); before a call that may merge (`applyPage`, `applyVerdicts`,
/// `removeZone`) the engine has queued the store's history, since a merge reads the queue and a
/// save that landed meanwhile must be in it. The engine talks to the sync-service itself: the
/// mapping answers in rows, records and bookkeeping.
protocol MirrorMapping: Sendable {
    /// The engine queues a store's changes before it sends, fetches or answers status: the
    /// history saved after the export cursor becomes queue entries (what a record change is,
    /// its fields and stamps, is the model's), the cursor moving with them. `enough`: stops
    /// once that many were queued, so a send's first batch goes out before the rest is queued.
    @discardableResult
    func queueHistory(of store: any MirrorStore, enough: Int?) throws -> IngestOutcome

    /// A send needs its next batches (up to `count`, each of up to `limit` places): the due
    /// queue entries past `start` as the records (or deletes) they send, from the rows as they
    /// are now. Writes nothing (it may run on a reading snapshot); `drops` are the entries read
    /// that send nothing.
    func buildBatches(from store: any MirrorStore, now: Double, limit: Int, count: Int, skipped: Set<String>, after start: Int64,
                      touched: Set<String>, drops: inout [MirrorBookkeeping.Pending], report: inout SyncSendResult) throws -> [[MirrorEngine.SendItem]]

    /// A record as it goes on the wire: a many-to-many link's record as CloudKit's CDMR record
    /// (inside the mirror a link is its link entity's record).
    func wireRecord(_ record: CloudRecord) -> CloudRecord

    /// A record from the wire as the mapping reads it (`wireRecord`'s inverse: a CDMR record as
    /// its link entity's record), for records the engine fetched itself.
    func readRecord(_ record: CloudRecord) -> CloudRecord

    /// A batch was answered: each item's verdict is applied (saved, merged, left to the engine
    /// to revert); what the engine must do after the store's write is returned.
    func applyVerdicts(_ verdicts: ModifyVerdicts, errors: [String: WireError], items: [MirrorEngine.SendItem], answered: [Int64],
                       to store: any MirrorStore, user: String?,
                       report: inout SyncSendResult, pass: inout MirrorEngine.SendPass) throws -> VerdictOutcome

    /// The server refused a change (permissionFailure): the object goes back to `serverCopy`
    /// (which the engine fetched; nil: the server has none) and clients are told.
    func revert(_ item: MirrorEngine.SendItem, serverCopy: CloudRecord?, error: WireError, in store: any MirrorStore, user: String?) throws

    /// Updates the server had no record for, still where they were after a fetch: the delete
    /// policy decides (the object goes, or is sent again as new).
    func settleMissing(_ items: [MirrorEngine.SendItem], in store: any MirrorStore) throws

    /// A zone's pages are about to be fetched: what makes each page ready for `applyPage` where
    /// it is decoded (on the client's reader thread for pages fetched ahead).
    func pagePreparer(for store: any MirrorStore) throws -> PagePreparer

    /// A zone's page was fetched: its changes and deletions go into the store, and its token is
    /// saved with them (a token is never kept without its page).
    func applyPage(_ page: ZonePage, to store: any MirrorStore, user: String?, report: inout SyncFetchResult) throws

    /// A zone went away (deleted, purged, left): its objects leave the store with its records'
    /// bookkeeping, queued changes and token.
    func removeZone(_ zone: ZoneID, from store: any MirrorStore) throws

    /// The cloud lost a zone's records (zoneNotFound, an encrypted-data reset): each record of it
    /// this store holds is queued to be sent again as new. In the caller's write.
    func requeueZone(_ zone: ZoneID, in store: any MirrorStore) throws

    /// share.create needs the graph of `objectID` (an object of the private store among `stores`):
    /// every object reachable from it, leaders first (the root, then the ends of the members'
    /// to-one chains), and whether it moves in one request of `sizing`'s items. An object
    /// already in a live share is `alreadyShared`.
    func shareGraph(of objectID: String, sizing: BatchSizing, in stores: [any MirrorStore]) throws -> (graph: [GraphMember], leaders: Int, atOnce: Bool)

    /// sync.initializeSchema: one representative record per mirrored entity, every field set
    /// with the type an export gives it, and each record type's field types.
    func schemaRecords() -> (records: [CloudRecord], recordTypes: [String: [String: String]])

    /// The account left the device (sign-out, another user): every object and the mirror's
    /// bookkeeping but `keys` leave the stores. Returns how many objects went.
    func removeEverything(from stores: [any MirrorStore], keeping keys: [String]) throws -> Int

    /// `sync.status` of a store: what only the model tells (the zone each queued change goes
    /// to, history not queued yet, links waiting, objects nothing will send).
    func statusDetails(of store: any MirrorStore, pending: [MirrorBookkeeping.Pending], exportCursor: Int, now: Double,
                       listUnsent: Bool) throws -> StoreStatusDetails
}

/// What one `queueHistory` did: how many changes it queued, and whether history is left
/// unqueued (it stopped at `enough`).
struct IngestOutcome {
    var queued = 0
    var more = false
}

/// A store's `sync.status` details only the mapping can tell (`MirrorMapping.statusDetails`).
struct StoreStatusDetails {
    var pendingByZone: [String: Int]
    var unqueuedTransactions: Int
    var pendingLinks: [SyncStatus.PendingLink]
    var unsent: [String]?
}

/// A fetched page of one zone, as the mapping applies it.
struct ZonePage {
    var changed: [CloudRecord]
    /// Per changed record, its row values as far as they need no store (`PagePreparer`).
    var prepared: [MirrorImport.Prepared?]
    var deleted: [(String, String)]
    var zone: ZoneID
    /// The zone's token after the page (nil: a page made up of held deletions).
    var token: String?
    /// The deletions are held (`holdTombstones`) for the fetch's end rather than applied.
    var holdDeletes: Bool
}

/// What applying a batch's verdicts leaves for the engine, after the store's write.
struct VerdictOutcome {
    /// Items the server refused for permission: the engine fetches each one's server copy and reverts it.
    var reverts: [(MirrorEngine.SendItem, WireError)] = []
    /// Share zones whose root the owner deleted: the engine deletes them in the cloud.
    var rootsDeleted: [String] = []
    /// Records saved or deleted at last: no longer listed as refused exports.
    var refusalsCleared: [String] = []
    /// Records the server refused for their content, listed by `sync.status` until one saves.
    var refused: [String: RefusedExport] = [:]
    var lastRefusal: WireError?
    /// Zones the server no longer has: made again before the next send into them.
    var zonesLost: [String] = []
    /// A move waits for another device's: fetch before the next send.
    var fetchBeforeSend = false
}
