import CloudWire
import MeowWire
import StoreServiceKit
import StoreWire

/// What the engine asks of the mapping: everything about what a record means, never about how
/// it travels. The engine holds the store lock and has queued the store's history when it
/// calls (a merge reads the queue, so a save that landed meanwhile must be in it), and talks to
/// the sync-service itself: the mapping answers in rows, records and bookkeeping.
protocol MirrorMapping: Sendable {
    /// A send needs its next batch: the due queue entries as the records (or deletes) they
    /// send, from the rows as they are now. Writes nothing (it may run on a reading snapshot);
    /// `drops` are the entries read that send nothing, `readThrough` the last queue position taken.
    func buildBatch(from state: MirrorBookkeeping, now: Double, limit: Int, skipped: Set<String>, after start: Int64,
                    touched: Set<String>, drops: inout [MirrorBookkeeping.Pending], report: inout SyncSendResult,
                    readThrough: inout Int64) throws -> [CloudMirror.SendItem]

    /// A zone's pages are about to be fetched: what makes each page ready for `applyPage` where
    /// it is decoded (on the client's reader thread for pages fetched ahead).
    func pagePreparer(for state: MirrorBookkeeping) -> PagePreparer

    /// A zone's page was fetched: its changes and deletions go into the store, and `token` is
    /// saved with them (a token is never kept without its page).
    func applyPage(_ page: ZonePage, to state: MirrorBookkeeping, storeIndex: Int, stores: StoreSet, user: String?,
                   report: inout SyncFetchResult) throws

    /// A batch was answered: each item's verdict is applied (saved, merged, deferred to the
    /// engine as a revert); what the engine must do after the store's write is returned.
    func applyVerdicts(_ verdicts: ModifyVerdicts, errors: [String: WireError], items: [CloudMirror.SendItem], answered: [Int64],
                       to state: MirrorBookkeeping, storeIndex: Int, stores: StoreSet, user: String?,
                       report: inout SyncSendResult, pass: inout CloudMirror.SendPass) throws -> VerdictOutcome

    /// The server refused a change (permissionFailure): the object goes back to `serverCopy`
    /// (which the engine fetched; nil: the server has none) and clients are told.
    func revert(_ item: CloudMirror.SendItem, serverCopy: CloudRecord?, error: WireError, in state: MirrorBookkeeping, storeIndex: Int,
                stores: StoreSet, user: String?) throws

    /// Updates the server had no record for, still where they were after a fetch: the delete
    /// policy decides (the object goes, or is sent again as new).
    func settleMissing(_ items: [CloudMirror.SendItem], in state: MirrorBookkeeping, storeIndex: Int, stores: StoreSet) throws

    /// A zone went away (deleted, purged, left): its objects leave the store with its records'
    /// bookkeeping, queued changes and token.
    func removeZone(_ zone: ZoneID, from state: MirrorBookkeeping, storeIndex: Int, stores: StoreSet) throws

    /// The cloud lost a zone's records (zoneNotFound, an encrypted-data reset): each record of it
    /// this store holds is queued to be sent again as new. In the caller's write.
    func requeueZone(_ zone: ZoneID, state: MirrorBookkeeping) throws

    /// share.create needs the graph of `objectID` (a private-store object): every object
    /// reachable from it, leaders first (the root, then the ends of the members' to-one chains),
    /// and whether it moves in one request of `sizing`'s items. An object already in a live
    /// share is `alreadyShared`.
    func shareGraph(of objectID: String, sizing: BatchSizing, stores: StoreSet) throws -> (graph: [GraphMember], leaders: Int, atOnce: Bool)

    /// A record as it goes on the wire: a many-to-many link's record as CloudKit's CDMR record
    /// (inside the mirror a link is its link entity's record).
    func wireRecord(_ record: CloudRecord) -> CloudRecord

    /// sync.initializeSchema: one representative record per mirrored entity, every field set
    /// with the type an export gives it, and each record type's field types.
    func schemaRecords() -> (records: [CloudRecord], recordTypes: [String: [String: String]])

    /// The account left the device (sign-out, another user): every object and the mirror's
    /// bookkeeping leave the stores. Returns how many objects went.
    func removeEverything(from stores: StoreSet, keeping keys: [String]) throws -> Int
}

/// A fetched page of one zone, as the mapping applies it.
struct ZonePage {
    var changed: [CloudRecord]
    /// Per changed record, its row values as far as they need no store (`ZoneChanges`).
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
    var reverts: [(CloudMirror.SendItem, WireError)] = []
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
