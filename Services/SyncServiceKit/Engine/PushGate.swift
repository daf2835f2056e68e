import CloudWire
import MeowWire
import ServiceRuntime
import Synchronization

/// Holds pushes — `databaseChanged` events and subscriptions' `notification` events — while an
/// operator asks (`admin.holdPushes`), and delivers or drops them on command
/// (`admin.releasePushes`): a test can then force any order of a server commit and its
/// notification — a push before the client fetches, after, or never.
final class PushGate: Sendable {
    struct Push: Sendable {
        let user: String
        /// Only connections working in this environment hear of it.
        let environment: CloudEnvironment
        /// The topic and event name it goes out as, and its data.
        let topic: String
        let name: String
        let data: JSONValue
        /// The connection whose request made the change: not pushed, as CloudKit excludes
        /// the device a change originates from.
        var origin: Int?
    }
    private struct State {
        var holding = false
        var held: [Push] = []
    }
    private let state = Mutex(State())

    /// Publishes now, or keeps the push while holding. `available` says whether a user still
    /// receives pushes (`CloudEngine.receivesPushes`): one set to noAccount gets none on the
    /// connections it still has open.
    func publish(_ push: Push, via events: EventHub, available: (String) -> Bool) {
        let deliverNow = state.withLock { state -> Bool in
            if state.holding { state.held.append(push); return false }
            return true
        }
        if deliverNow { Self.deliver(push, via: events, available: available) }
    }

    func hold() -> PushGateStatus {
        state.withLock { state in
            state.holding = true
            return PushGateStatus(holding: true, held: state.held.count, delivered: 0, dropped: 0)
        }
    }

    /// Stops holding; delivers the held pushes in commit order (or drops them).
    func release(drop: Bool, via events: EventHub, available: (String) -> Bool) -> PushGateStatus {
        let held = state.withLock { state -> [Push] in
            state.holding = false
            defer { state.held.removeAll() }
            return state.held
        }
        if !drop { for push in held { Self.deliver(push, via: events, available: available) } }
        return PushGateStatus(holding: false, held: 0, delivered: drop ? 0 : held.count, dropped: drop ? held.count : 0)
    }

    private static func deliver(_ push: Push, via events: EventHub, available: (String) -> Bool) {
        guard available(push.user) else { return }
        events.publish(topic: push.topic, event: push.name, data: push.data) {
            $0.principal?.user == push.user && $0.id != push.origin && (try? SyncService.environment(of: $0)) == push.environment
        }
    }
}

struct PushGateStatus: Codable, Sendable {
    var holding: Bool
    var held: Int
    var delivered: Int
    var dropped: Int
}

struct ReleasePushesParams: Codable, Sendable {
    /// Drop the held pushes instead of delivering them (the "push lost" case).
    var drop: Bool?
}
