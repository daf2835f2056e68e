import Foundation
import MeowWire
import Synchronization
@testable import StoreServiceKit
import Testing

extension Mirroring {
    /// The pages a zone fetch asks for ahead of the one it applies (`PagesAhead`).
    @Suite("Mirroring: pages fetched ahead (in-process)")
    struct PagesAheadTests {
        @Test("A page that arrives after the fetch stopped is not decoded; one before is")
        func pagesAfterStopAreNotDecoded() throws {
            let ahead = PagesAhead(depth: 2)
            let decodes = Mutex(0)
            let sent = Mutex<[ReplyWaiter]>([])
            ahead.setUp(decode: { json in decodes.withLock { $0 += 1 }; return json["token"]?.stringValue ?? "" },
                        send: { _, waiter in sent.withLock { $0.append(waiter) } })
            ahead.ask(after: "t1")
            ahead.ask(after: "t2")
            let waiters = sent.withLock { $0 }
            #expect(waiters.count == 2)
            waiters[0].resolve(.success(["token": "t2"]))
            #expect(waiters[0].decoded(as: String.self) == "t2")
            ahead.stop()
            waiters[1].resolve(.success(["token": "t3"]))
            #expect(waiters[1].decoded(as: String.self) == nil, "decoded after the fetch ended")
            #expect(decodes.withLock { $0 } == 1)
            if case .failure = waiters[1].wait() { Issue.record("the reply itself must still reach whoever waits") }
        }
    }
}
