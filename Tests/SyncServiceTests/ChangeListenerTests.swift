import CloudWire
import Foundation
import MeowWire
import Synchronization
@testable import SyncServiceKit
import Testing

@Suite("Change notices")
struct ChangeListenerTests {
    /// The listener used to come back from its Mutex wrapped in two more thunks per commit; in a
    /// long-running service, publishing then overflowed a connection thread's stack (SIGSEGV
    /// after ~24,000 commits in a load run). Here 4,000 commits run on a thread with a 256 KiB
    /// stack, which the old code overflowed after about 1,300 — so this crashes if it comes back.
    @Test("thousands of commits notify the listener at a constant stack depth")
    func listenerDoesNotDeepen() async throws {
        let cloud = try CloudFixture()
        try cloud.makeZone()
        let notified = Mutex(0)
        cloud.engine.onChange { notices in notified.withLock { $0 += notices.count } }
        let commits = 4_000
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let thread = Thread {
                do {
                    for index in 0..<commits {
                        try cloud.save([CloudRecord(recordName: "r\(index)", zoneID: ZoneID(zoneName: "Zone"), recordType: "CD_CareEvent")])
                    }
                    continuation.resume(returning: nil)
                } catch {
                    continuation.resume(returning: "\(error)")
                }
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
        #expect(failure == nil)
        #expect(notified.withLock { $0 } >= commits)
    }
}
