import Foundation
import SQLiteKit

/// A thread that binds and steps a save's new rows while the saving thread prepares the next
/// ones: SQLite's insert and index work is about as long as the writer's own work per row, and
/// the service has a second core. The rows are stepped in the order they were sent, on the
/// saving thread's connection and inside its transaction, so what is written and when it
/// commits do not change: only who calls `sqlite3_step`.
///
/// One save at a time holds it (`acquire`); a save that finds it taken steps its rows itself.
/// While a save holds it with rows in flight, the saving thread must not touch that connection:
/// it calls `wait()` first (SQLite connections here are opened without their own mutex).
final class RowStepper: @unchecked Sendable {
    static let shared = RowStepper()

    struct Row {
        var statement: Statement
        var row: PersistentStore.StoredRow
    }

    /// The first row that failed: its number in the holder's sending order, and SQLite's error.
    struct Failure: Error {
        var number: Int
        var error: SQLiteError
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var held = false
    private var queue: [[Row]] = []
    private var working = false
    private var failure: Failure?
    /// Rows taken from the queue since `acquire`: the next row's number.
    private var taken = 0

    private init() {
        let thread = Thread { [self] in run() }
        thread.name = "store-row-stepper"
        thread.start()
    }

    /// Takes the stepper for one save; false when another save holds it.
    func acquire() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !held else { return false }
        (held, failure, taken) = (true, nil, 0)
        return true
    }

    /// Queues rows to be stepped after those sent before them.
    func send(_ rows: [Row]) {
        condition.lock()
        queue.append(rows)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every row sent has been stepped (or skipped after a failure); returns the
    /// first failure since `acquire`, and clears it.
    func wait() -> Failure? {
        condition.lock()
        defer { condition.unlock() }
        while !queue.isEmpty || working { condition.wait() }
        defer { failure = nil }
        return failure
    }

    /// Waits for the rows in flight and gives the stepper up; their failure, if any, is dropped
    /// (the caller is rolling back or has read it with `wait`).
    func release() {
        _ = wait()
        condition.lock()
        held = false
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty { condition.wait() }
            let rows = queue.removeFirst()
            let first = taken
            taken += rows.count
            // After a failure the rest are not stepped: the save is refused and rolled back.
            let skip = failure != nil
            working = true
            condition.unlock()

            var failed: Failure?
            if !skip {
                for (offset, row) in rows.enumerated() {
                    do { try PersistentStore.step(row.statement, row.row) } catch {
                        failed = Failure(number: first + offset, error: error)
                        break
                    }
                }
            }

            condition.lock()
            if let failed, failure == nil { failure = failed }
            working = false
            condition.broadcast()
            condition.unlock()
        }
    }
}
