import Foundation
import SQLiteKit

/// Binds and steps a save's new rows on a worker thread while the saving thread prepares the next
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

    /// The first row that failed: its number in the holder's sending order, and SQLite's error.
    struct Failure: Error {
        var number: Int
        var error: SQLiteError
    }

    /// A batch handed to the thread. The saving thread keeps its own reference and does not
    /// touch the batch's statements until `wait` returns, so the thread is their only user.
    private struct Batch: @unchecked Sendable {
        var statement: Statement
        var rows: [PersistentStore.StoredRow]
        var first: Int
    }

    private let thread = WorkerThread(name: "store-row-stepper")
    private let lock = NSLock()
    // Guarded by `lock`.
    private var held = false
    private var failure: Failure?
    /// Rows sent since `acquire`: the next row's number (read and written by the holder only).
    private var sentCount = 0

    private init() {}

    /// Takes the stepper for one save; false when another save holds it.
    func acquire() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !held else { return false }
        (held, failure, sentCount) = (true, nil, 0)
        return true
    }

    /// Queues rows of one statement to be stepped after those sent before them.
    func send(_ rows: [PersistentStore.StoredRow], statement: Statement) {
        let batch = Batch(statement: statement, rows: rows, first: sentCount)
        sentCount += rows.count
        thread.hand { [self] in step(batch) }
    }

    /// Waits until every row sent has been stepped (or skipped after a failure); returns the
    /// first failure since `acquire`, and clears it.
    func wait() -> Failure? {
        thread.waitUntilIdle()
        lock.lock()
        defer { lock.unlock() }
        defer { failure = nil }
        return failure
    }

    /// Waits for the rows in flight and gives the stepper up; their failure, if any, is dropped
    /// (the caller is rolling back or has read it with `wait`).
    func release() {
        _ = wait()
        lock.lock()
        held = false
        lock.unlock()
    }

    private func step(_ batch: Batch) {
        // After a failure the rest are not stepped: the save is refused and rolled back.
        lock.lock()
        let skip = failure != nil
        lock.unlock()
        guard !skip else { return }
        for (offset, row) in batch.rows.enumerated() {
            do { try PersistentStore.step(batch.statement, row) } catch {
                lock.lock()
                if failure == nil { failure = Failure(number: batch.first + offset, error: error) }
                lock.unlock()
                return
            }
        }
    }
}
