/// How much one request to the sync-service carries, decided in one place: the items per
/// `records.modify` (a send's batches, share.create's saves), learnt down on `limitExceeded`;
/// how many batches a send keeps in flight, and so how much history it queues ahead; the
/// records per fetched page.
struct BatchSizing: Sendable {
    /// CloudKit's limit on the items of one modify request.
    static let largest = 400
    /// How many batches may wait for their answer at once. The connection's requests are
    /// served in order, so the server works on the next batches while the device applies the
    /// verdicts of the one before; with one, a send ran at the sum of the two sides' times.
    static let inFlight = 3
    /// Records per fetched page (`changes.fetchZone`'s limit).
    static let fetchPage = 1000

    /// Items per records.modify now: `--batch-size` at first, never more after a limitExceeded.
    private(set) var limit: Int

    init(start: Int) { limit = min(start, Self.largest) }

    /// The server refused a request of `items` items as over its limits: the next carry at most
    /// half as many. Returns that half.
    @discardableResult
    mutating func exceeded(items: Int) -> Int {
        let halved = max(1, items / 2)
        limit = min(limit, halved)
        return halved
    }

    /// The history a send queues ahead of its batches: as many entries as its batches in flight
    /// carry, so one turn of the store lock between a client's saves builds them all.
    var queueAhead: Int { limit * Self.inFlight }

    /// Whether a graph of `members` records moves into a share in one request: each record saved
    /// and its old copy deleted, and the share record.
    func movesAtOnce(members: Int) -> Bool { 2 * members + 1 <= limit }
}
