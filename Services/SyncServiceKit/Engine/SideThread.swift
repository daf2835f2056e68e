import Foundation

/// A thread that runs one job beside the request that hands it over: work that needs none of
/// the request's locks (a modify's reply written while its commit waits for the disk) uses the
/// second core instead of adding to the request's time. One job at a time: while it is busy
/// `start` returns nil and the caller does the work itself, so no request waits behind another's.
/// The thread starts with the first job and ends when its owner goes.
final class SideThread: Sendable {
    private let queue = Queue()
    private let name: String

    init(name: String) { self.name = name }

    deinit { queue.stop() }

    /// `job` started on the side thread, its result read with `SideResult.value()`; nil when the
    /// thread is running another job.
    func start<T: Sendable>(_ job: @escaping @Sendable () -> T) -> SideResult<T>? {
        let result = SideResult<T>()
        guard queue.hand({ result.set(job()) }, startingThread: name) else { return nil }
        return result
    }

    /// The thread's one slot, shared with the thread (which holds this, not the `SideThread`,
    /// so the owner's deinit can stop it).
    private final class Queue: @unchecked Sendable {
        private let condition = NSCondition()
        // Guarded by `condition`.
        private var job: (@Sendable () -> Void)?
        private var busy = false
        private var started = false
        private var stopped = false

        func hand(_ work: @escaping @Sendable () -> Void, startingThread name: String) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            guard !busy, !stopped else { return false }
            if !started {
                started = true
                let thread = Thread { [self] in run() }
                thread.name = name
                thread.start()
            }
            busy = true
            job = work
            condition.signal()
            return true
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.signal()
            condition.unlock()
        }

        private func run() {
            while true {
                condition.lock()
                while job == nil && !stopped { condition.wait() }
                let work = job
                job = nil
                condition.unlock()
                guard let work else { return }
                work()
                condition.lock()
                busy = false
                condition.unlock()
            }
        }
    }
}

/// A side job's result: `value()` waits until the job has set it.
final class SideResult<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var result: T?
    private var done = false

    fileprivate func set(_ value: T) {
        condition.lock()
        result = value
        done = true
        condition.broadcast()
        condition.unlock()
    }

    func value() -> T {
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        return result!
    }
}
