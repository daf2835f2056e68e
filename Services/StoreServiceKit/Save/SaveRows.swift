import SQLiteKit

/// A save's new rows on their way to SQLite. A large save hands them, in batches, to the
/// `RowStepper` thread, which steps them while the writer prepares the next ones; a small save,
/// or one that finds the stepper taken, steps each row at once. Either way the rows are stepped
/// in the order they were inserted, in the save's transaction.
struct SaveRows {
    /// Fewer new objects than this are stepped at once: a hand-off to another thread costs a
    /// wake-up, which only a batch of rows repays (and a one-object save keeps its latency).
    static let pipelinedMinimum = 64
    /// Rows per hand-off: small enough that the stepper starts early and the last batch, which
    /// nothing overlaps, is short; large enough that the wake-ups are a small share.
    static let batchSize = 32

    /// A row SQLite refused, and the object it was the row of.
    struct Failure: Error {
        var entity: String
        var uuid: String
        var objectID: String
        var store: Int
        var error: SQLiteError

        init(_ object: ContextObject, store: Int, error: SQLiteError) {
            (entity, uuid, objectID, self.store, self.error) = (object.entity.name, object.uuid, object.uri, store, error)
        }
    }

    private var stepper: RowStepper?
    /// The rows not yet sent, all of one statement: a row of another store or entity sends them
    /// first, so the statement goes across once a batch rather than with each row (both threads
    /// counting its references on every row kept its memory moving between the cores).
    private var batch: [PersistentStore.StoredRow] = []
    private var batchStatement: Statement?
    /// The batches sent and not yet waited for, kept so that the rows' values are freed on the
    /// thread that made them: memory freed on another thread goes back to this thread's malloc
    /// arena under its lock (freeing a reset context's objects on the stepper's thread tripled
    /// the next insert's time).
    private var sentBatches: [[PersistentStore.StoredRow]] = []
    /// The objects of the rows sent to the stepper, in sending order, with their stores.
    private var sent: [(object: ContextObject, store: Int)] = []
    /// The statement of the last row's store and entity: a batch is mostly of one entity.
    private var last: (store: Int, entity: ObjectIdentifier, statement: Statement)?

    init(newObjects: Int) {
        guard newObjects >= Self.pipelinedMinimum, RowStepper.shared.acquire() else { return }
        stepper = .shared
        sent.reserveCapacity(newObjects)
        batch.reserveCapacity(Self.batchSize)
    }

    /// Whether rows may be in flight on another thread: the saving thread must `wait` before it
    /// uses a store's connection itself.
    var isPipelined: Bool { stepper != nil }

    /// The prepared insert for `entity` in `store` (prepared on the saving thread, after the
    /// rows in flight are stepped, when it is not yet at hand).
    /// Takes the store itself, not the save's `StoreSet`: the writer passing its own set into its
    /// own `rows` copied the set (a retain and release of each of its references) for every row.
    mutating func statement(_ entity: EntityDescription, store index: Int, of store: PersistentStore) throws -> Statement {
        let key = ObjectIdentifier(entity)
        if let last, last.store == index, last.entity == key { return last.statement }
        try wait()
        let statement = try store.insertStatement(entity)
        last = (index, key, statement)
        return statement
    }

    /// Steps `row` now, or queues it for the stepper (the row is moved into the batch, not copied).
    mutating func insert(_ row: consuming PersistentStore.StoredRow, statement: Statement, object: ContextObject, store: Int) throws(Failure) {
        guard let stepper else {
            do { try PersistentStore.step(statement, row) } catch { throw Failure(object, store: store, error: error) }
            return
        }
        if let batchStatement, batchStatement !== statement { send(to: stepper) }
        batchStatement = statement
        batch.append(row)
        sent.append((object, store))
        if batch.count == Self.batchSize { send(to: stepper) }
    }

    /// Sends what is batched and waits until every row is stepped; throws the first row SQLite
    /// refused (the rows after it were not stepped).
    mutating func wait() throws(Failure) {
        guard let stepper else { return }
        if !batch.isEmpty { send(to: stepper) }
        let failure = stepper.wait()
        sentBatches.removeAll(keepingCapacity: true)
        if let failure {
            let (object, store) = sent[failure.number]
            throw Failure(object, store: store, error: failure.error)
        }
    }

    private mutating func send(to stepper: RowStepper) {
        guard let batchStatement, !batch.isEmpty else { return }
        stepper.send(batch, statement: batchStatement)
        sentBatches.append(batch)
        batch = []
        batch.reserveCapacity(Self.batchSize)
    }

    /// Waits for the rows in flight and gives the stepper up. `wait` first to hear of a failure;
    /// on a refused save (being rolled back) the rows in flight only need to be finished.
    mutating func end() {
        guard let stepper else { return }
        batch.removeAll()
        batchStatement = nil
        stepper.release()
        sentBatches.removeAll()
        self.stepper = nil
    }
}
