import Foundation

/// Runs blocking work on its own thread so async tests never block Swift's cooperative pool
/// (2 cores: two blocked pool threads would stall every other test).
public func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}
