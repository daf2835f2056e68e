import Foundation

/// A send's next batches read from the store's reading snapshot on a thread of their own, while
/// the send's thread waits for the batch before them and applies its verdicts: one thread doing
/// both in turn was what bounded a send (each half about a third of its CPU, the cloud's core
/// idle meanwhile). The read writes nothing; its batches are finished (`finishBatch`) on the
/// send's thread, or dropped unused when a verdict changed the queue.
/// @unchecked Sendable: the work's store and what it returns are handed over whole: the send's
/// thread touches neither between `init` and `join` (the semaphore orders the two threads).
final class BatchesAhead<Value>: @unchecked Sendable {
    private var work: (() throws -> Value)?
    private var result: Result<Value, any Error>?
    private let done = DispatchSemaphore(value: 0)
    private var joined = false

    /// Starts `work` at once on a new thread (which inherits the send thread's scheduling).
    init(_ work: @escaping () throws -> Value) {
        self.work = work
        let thread = Thread { [self] in run() }
        thread.name = "cloud-mirror.build"
        thread.start()
    }

    private func run() {
        result = Result { try work!() }
        work = nil
        done.signal()
    }

    /// Waits for the read; its batches, or the error it met. (Called on the send's thread only.)
    func join() throws -> Value {
        if !joined {
            done.wait()
            joined = true
        }
        return try result!.get()
    }
}
