import Foundation
@testable import CloudMirrorKit
import Testing

extension Mirroring {
    /// Automatic mode's loop sleeps between passes on a `WakeSignal`; saves and pushes wake it.
    @Suite("Mirroring: the automatic loop's wake signal (in-process)")
    struct WakeSignalTests {
        @Test("A signal sent while nobody waits (a pass is running) wakes the next wait at once; each is taken once")
        func aSignalWhileBusyIsKept() throws {
            let wake = WakeSignal()
            wake.signal()
            wake.signal()
            // Were the signal lost, this would wait the whole minute and answer false.
            #expect(wake.wait(until: Date().addingTimeInterval(60)) == true)
            #expect(wake.wait(until: Date()) == false, "two signals before one wait are one wake-up, already taken")
        }

        @Test("A signal from another thread wakes a waiting loop")
        func aSignalWakesAWaiter() async throws {
            let wake = WakeSignal()
            let woke = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                let thread = Thread {
                    continuation.resume(returning: wake.wait(until: Date().addingTimeInterval(60)))
                }
                thread.start()
                wake.signal()
            }
            #expect(woke, "woken, not timed out")
        }
    }
}
