import Foundation
import SQLiteKit
import Synchronization
import Testing

/// A gate a job waits at until the test opens it, so the test knows a job is running.
private final class Gate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)
    /// Run by the job: says it is running, then waits to be let through.
    func pass() {
        entered.signal()
        opened.wait()
    }
    func waitUntilEntered() { entered.wait() }
    func open() { opened.signal() }
}

@Suite("WorkerThread")
struct WorkerThreadTests {
    @Test("jobs run one at a time in the order handed; waitUntilIdle returns after the last")
    func runsInOrder() {
        let worker = WorkerThread(name: "test-order")
        let seen = Mutex<[Int]>([])
        for number in 0..<100 { worker.hand { seen.withLock { $0.append(number) } } }
        worker.waitUntilIdle()
        #expect(seen.withLock { $0 } == Array(0..<100))
    }

    @Test("handIfIdle refuses while a job runs or waits, and takes the next once the thread is idle")
    func handIfIdleRefusesWhileBusy() {
        let worker = WorkerThread(name: "test-idle")
        let gate = Gate()
        #expect(worker.handIfIdle { gate.pass() })
        gate.waitUntilEntered()
        #expect(!worker.handIfIdle {})
        gate.open()
        worker.waitUntilIdle()
        let ran = Mutex(false)
        #expect(worker.handIfIdle { ran.withLock { $0 = true } })
        worker.waitUntilIdle()
        #expect(ran.withLock { $0 })
    }

    @Test("handUnlessWaiting folds requests made while a job runs into one more run after it")
    func handUnlessWaitingFolds() {
        let worker = WorkerThread(name: "test-fold")
        let gate = Gate()
        let runs = Mutex(0)
        #expect(worker.handUnlessWaiting { gate.pass(); runs.withLock { $0 += 1 } })
        gate.waitUntilEntered()
        // The first is running: one more is queued, the rest are folded into it.
        #expect(worker.handUnlessWaiting { runs.withLock { $0 += 1 } })
        #expect(!worker.handUnlessWaiting { runs.withLock { $0 += 1 } })
        #expect(!worker.handUnlessWaiting { runs.withLock { $0 += 1 } })
        gate.open()
        worker.waitUntilIdle()
        #expect(runs.withLock { $0 } == 2)
    }

    @Test("startIfIdle hands back the job's result, and nil while the thread is busy")
    func startIfIdleResult() {
        let worker = WorkerThread(name: "test-result")
        let gate = Gate()
        let first = worker.startIfIdle { () -> Int in gate.pass(); return 42 }
        #expect(first != nil)
        gate.waitUntilEntered()
        #expect(worker.startIfIdle { 7 } == nil)
        gate.open()
        #expect(first?.value() == 42)
    }

    @Test("stop runs the jobs already queued, then refuses new ones")
    func stopDrainsThenRefuses() {
        let worker = WorkerThread(name: "test-stop")
        let gate = Gate()
        let seen = Mutex<[Int]>([])
        worker.hand { gate.pass(); seen.withLock { $0.append(1) } }
        worker.hand { seen.withLock { $0.append(2) } }
        gate.waitUntilEntered()
        worker.stop()
        #expect(!worker.hand { seen.withLock { $0.append(3) } })
        gate.open()
        worker.waitUntilIdle()
        #expect(seen.withLock { $0 } == [1, 2])
    }
}
