import Foundation

/// A thread of its own that runs the jobs handed to it, one at a time, in the order handed:
/// work beside a request that would otherwise add to the request's time while the machine has
/// a second core (a save's rows stepped while the writer prepares the next ones, a reply written
/// while the commit waits for the disk, the log checkpointed after a commit).
///
/// The thread starts with the first job and ends after `stop`, or once its owner lets go of
/// it (the thread holds only the queue, so dropping the `WorkerThread` stops it).
public final class WorkerThread: Sendable {
    public typealias Job = @Sendable () -> Void

    private let queue: Queue

    public init(name: String) { queue = Queue(name: name) }

    deinit { queue.stop() }

    /// Queues `job` after the jobs handed before it; false once stopped.
    @discardableResult
    public func hand(_ job: @escaping Job) -> Bool { queue.hand(job, when: { _, _ in true }) }

    /// Hands `job` only when the thread has nothing running or queued, so no caller waits behind
    /// another's job; false otherwise (the caller does the work itself).
    public func handIfIdle(_ job: @escaping Job) -> Bool { queue.hand(job, when: { queued, running in queued == 0 && !running }) }

    /// Hands `job` unless a job is already waiting to start: requests for the same work that
    /// come while it runs are folded into one more run after it.
    public func handUnlessWaiting(_ job: @escaping Job) -> Bool { queue.hand(job, when: { queued, _ in queued == 0 }) }

    /// `job` started when the thread is idle (`handIfIdle`), its result read with
    /// `WorkerResult.value()`; nil when the thread is busy.
    public func startIfIdle<T: Sendable>(_ job: @escaping @Sendable () -> T) -> WorkerResult<T>? {
        let result = WorkerResult<T>()
        return handIfIdle { result.set(job()) } ? result : nil
    }

    /// Waits until every job handed so far has run.
    public func waitUntilIdle() { queue.waitUntilIdle() }

    /// Refuses later jobs; the thread ends once the queued ones have run.
    public func stop() { queue.stop() }

    /// The jobs and the thread's state, shared with the thread.
    private final class Queue: @unchecked Sendable {
        private let name: String
        private let condition = NSCondition()
        // Guarded by `condition`.
        private var jobs: [Job] = []
        private var running = false
        private var started = false
        private var stopped = false

        init(name: String) { self.name = name }

        func hand(_ job: @escaping Job, when allowed: (_ queued: Int, _ running: Bool) -> Bool) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            guard !stopped, allowed(jobs.count, running) else { return false }
            if !started {
                started = true
                let thread = Thread { [self] in run() }
                thread.name = name
                thread.start()
            }
            jobs.append(job)
            condition.broadcast()
            return true
        }

        func waitUntilIdle() {
            condition.lock()
            defer { condition.unlock() }
            while !jobs.isEmpty || running { condition.wait() }
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.broadcast()
            condition.unlock()
        }

        private func run() {
            while true {
                condition.lock()
                while jobs.isEmpty && !stopped { condition.wait() }
                guard !jobs.isEmpty else {
                    condition.unlock()
                    return
                }
                let job = jobs.removeFirst()
                running = true
                condition.unlock()
                job()
                condition.lock()
                running = false
                condition.broadcast()
                condition.unlock()
            }
        }
    }
}

/// A job's result: `value()` waits until the job has set it.
public final class WorkerResult<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var result: T?
    private var done = false

    fileprivate init() {}

    fileprivate func set(_ value: T) {
        condition.lock()
        result = value
        done = true
        condition.broadcast()
        condition.unlock()
    }

    public func value() -> T {
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        return result!
    }
}
