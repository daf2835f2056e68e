import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import Synchronization

/// The pages of one zone's fetch requested ahead of the one being applied, at most `depth`:
/// each page's request goes out as soon as the page before it has arrived and been decoded (its
/// token says where the next starts), so the sync-service and the page parser stay ahead of the
/// thread applying pages instead of waiting for it to ask. Waiters are queued before their
/// request is sent, so the queue is in page order however fast replies come back.
final class PagesAhead: Sendable {
    typealias Decode = @Sendable (JSONValue) -> any Sendable
    typealias Read = @Sendable (UnsafeBufferPointer<UInt8>) -> (any Sendable)?
    typealias Send = @Sendable (String, ReplyWaiter) -> Void
    private struct State {
        var waiting: [ReplyWaiter] = []
        /// The token to ask from once there is room (`depth` pages were already ahead).
        var parked: String?
        var stopped = false
        var decode: Decode?
        var read: Read?
        var send: Send?
    }
    private let state = Mutex(State())
    let depth: Int

    init(depth: Int) { self.depth = depth }

    /// `decode` runs for pages that arrive while the fetch still wants them: one that comes
    /// after `stop` (the fetch of the zone ended, say on an error) is left undecoded, as nothing
    /// will apply it.
    /// `read`: the same from the reply's bytes (nil: it cannot, and `decode` gets the tree).
    func setUp(decode: @escaping Decode, read: Read? = nil, send: @escaping Send) {
        let wanted: Decode = { [weak self] json in
            guard let self, !self.state.withLock({ $0.stopped }) else { return Unwanted() }
            return decode(json)
        }
        var wantedBytes: Read?
        if let read {
            wantedBytes = { [weak self] bytes -> (any Sendable)? in
                guard let self, !self.state.withLock({ $0.stopped }) else { return Unwanted() }
                return read(bytes)
            }
        }
        let reading = wantedBytes
        state.withLock { $0.decode = wanted; $0.read = reading; $0.send = send }
    }

    /// What a page that came after `stop` decodes to.
    struct Unwanted: Sendable {}

    /// Asks for the page after `token`: by the applying thread for a page that did not come
    /// ahead, by the client's reader thread when a page that came ahead has more to come.
    func ask(after token: String) {
        let queued = state.withLock { state -> (ReplyWaiter, Send)? in
            guard !state.stopped, let send = state.send else { return nil }
            if state.waiting.count >= depth { state.parked = token; return nil }
            let waiter = ReplyWaiter(decode: state.decode, read: state.read)
            state.waiting.append(waiter)
            return (waiter, send)
        }
        if let (waiter, send) = queued { send(token, waiter) }
    }

    /// The next page's reply, oldest first; nil when none was asked for.
    func next() -> ReplyWaiter? {
        let (waiter, parked) = state.withLock { state -> (ReplyWaiter?, String?) in
            guard !state.waiting.isEmpty else { return (nil, nil) }
            let waiter = state.waiting.removeFirst()
            let parked = state.parked
            state.parked = nil
            return (waiter, parked)
        }
        if let parked { ask(after: parked) }
        return waiter
    }

    /// Nothing more is asked for (the fetch of the zone ended).
    func stop() { state.withLock { $0.stopped = true; $0.decode = nil; $0.read = nil; $0.send = nil } }
}
