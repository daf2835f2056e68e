import Foundation
@testable import StoreServiceKit
import Synchronization
import Testing

@Suite("Announcements in commit order, a fetched page's after its log is synced (in-process)")
struct OrderedAnnouncerTests {
    @Test("With nothing waiting an announcement is made at once, on the caller's thread")
    func immediateWhenNothingWaits() {
        let announcer = OrderedAnnouncer()
        let made = Mutex<[String]>([])
        announcer.now { made.withLock { $0.append("save") } }
        #expect(made.withLock { $0 } == ["save"])
        #expect(announcer.logSyncs == 0)
    }

    @Test("What is announced after a deferred announcement waits behind it, and the log is synced before either")
    func laterAnnouncementsQueueBehindTheSync() throws {
        let directory = NSTemporaryDirectory() + "announcer-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.sqlite"
        try Data("log".utf8).write(to: URL(fileURLWithPath: path + "-wal"))
        let announcer = OrderedAnnouncer()
        let made = Mutex<[String]>([])
        let syncedFirst = Mutex<Bool?>(nil)
        announcer.afterSync(path: path) {
            syncedFirst.withLock { $0 = announcer.logSyncs == 1 }
            made.withLock { $0.append("page 1") }
        }
        // A client's save committed after the page: its notice must not overtake the page's.
        announcer.now { made.withLock { $0.append("save") } }
        announcer.afterSync(path: path) { made.withLock { $0.append("page 2") } }
        announcer.now { made.withLock { $0.append("event") } }
        announcer.drain()
        #expect(made.withLock { $0 } == ["page 1", "save", "page 2", "event"])
        #expect(syncedFirst.withLock { $0 } == true)
        #expect(announcer.logSyncs == 2)
        // Drained: the next one is immediate again.
        announcer.now { made.withLock { $0.append("after") } }
        #expect(made.withLock { $0.last } == "after")
    }
}
