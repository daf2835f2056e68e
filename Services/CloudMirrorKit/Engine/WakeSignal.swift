import Foundation
import StoreServiceKit
import Synchronization

/// Wakes a loop that waits between passes. A signal that comes while the loop is busy is kept
/// for its next wait (a bare condition signal was lost then, and a device caught a burst of saves
/// or pushes only at its next 0.2 s poll).
final class WakeSignal: Sendable {
    private let condition = NSCondition()
    /// Set under the condition's lock by `signal`, cleared by `wait`.
    private let pending = Atomic<Bool>(false)

    func signal() {
        condition.lock()
        pending.store(true, ordering: .relaxed)
        condition.signal()
        condition.unlock()
    }

    /// Waits until signalled (also before this call, since the last wait) or until `deadline`;
    /// true when signalled.
    func wait(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !pending.load(ordering: .relaxed), condition.wait(until: deadline) {}
        return pending.exchange(false, ordering: .relaxed)
    }
}
