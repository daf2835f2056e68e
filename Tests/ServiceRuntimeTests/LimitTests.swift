import Foundation
import MeowWire
@testable import ServiceRuntime
import Testing

@Suite("Connection slots, the frame budget, the hello throttle")
struct LimitTests {
    func slots(total: Int = 100, perPeer: Int = 100, pending: Int = 100) -> ConnectionSlots {
        var configuration = ServiceConfiguration(socketPath: "/unused.sock", persistence: .inMemory)
        configuration.maxConnections = total
        configuration.maxConnectionsPerPeer = perPeer
        configuration.maxPendingConnections = pending
        return ConnectionSlots(configuration: configuration)
    }

    @Test("the total limit refuses the next connection with reason total, and a released slot is taken again")
    func totalLimit() {
        let slots = slots(total: 2)
        #expect(slots.take(pid: 1) == nil)
        #expect(slots.take(pid: 2) == nil)
        let refusal = slots.take(pid: 3)
        #expect(refusal?.code == .tooManyConnections)
        #expect(refusal?.details["reason"] == "total")
        #expect(refusal?.details["limit"] == 2)
        slots.release(pid: 1, greeted: false)
        #expect(slots.take(pid: 3) == nil)
    }

    @Test("one peer process cannot take more than its share; other peers still can")
    func perPeerLimit() {
        let slots = slots(perPeer: 2)
        #expect(slots.take(pid: 10) == nil)
        #expect(slots.take(pid: 10) == nil)
        let refusal = slots.take(pid: 10)
        #expect(refusal?.details["reason"] == "perPeer")
        #expect(refusal?.message.contains("pid 10") == true)
        #expect(slots.take(pid: 11) == nil)
        slots.release(pid: 10, greeted: false)
        #expect(slots.take(pid: 10) == nil)
    }

    @Test("connections that have not said hello are limited apart; hello, or closing, frees a pending slot once")
    func pendingLimit() {
        let slots = slots(pending: 1)
        #expect(slots.take(pid: 1) == nil)
        #expect(slots.take(pid: 2)?.details["reason"] == "pending")
        slots.greeted()  // the first said hello
        #expect(slots.take(pid: 2) == nil)
        slots.release(pid: 1, greeted: true)  // counted as pending no longer: frees nothing there
        #expect(slots.take(pid: 3)?.details["reason"] == "pending")
        slots.release(pid: 2, greeted: false)
        #expect(slots.take(pid: 3) == nil)
    }

    @Test("the frame budget charges growth against one limit, refuses growth past it, and always takes a charge back")
    func frameBudget() {
        let budget = FrameBudget(limit: 1000)
        #expect(budget.recharge(from: 0, to: 600))
        #expect(!budget.recharge(from: 0, to: 500))  // 1100 > 1000: nothing charged
        #expect(budget.inUse == 600)
        #expect(budget.recharge(from: 0, to: 400))
        #expect(budget.inUse == 1000)
        #expect(budget.recharge(from: 600, to: 0))
        #expect(budget.recharge(from: 400, to: 0))
        #expect(budget.inUse == 0)
        let free = FrameBudget.freeBytesPerConnection
        #expect(FrameBudget.charge(forBuffered: free) == 0)
        #expect(FrameBudget.charge(forBuffered: free + 10) == 10)
    }

    @Test("a refused credential's delay doubles per failure from 50 ms; the fifth failure closes")
    func helloThrottleDelays() {
        #expect((1...5).map(HelloThrottle.delayMilliseconds(afterFailure:)) == [50, 100, 200, 400, 800])
        #expect(HelloThrottle.delayMilliseconds(afterFailure: 0) == 50)
        #expect(HelloThrottle.delayMilliseconds(afterFailure: 40) == 50 << 10)  // bounded, never overflows
        #expect(HelloThrottle.maxFailures == 5)
    }

    @Test("a SleepingMutex keeps every increment of threads racing on it")
    func sleepingMutex() {
        let counter = SleepingMutex(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
        }
        #expect(counter.withLock { $0 } == 40_000)
    }
}
