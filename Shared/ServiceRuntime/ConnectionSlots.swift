import MeowWire
import Synchronization

/// Who holds the connection slots: in total, per peer process, and before hello. One peer
/// cannot take every slot (the per-peer limit), and connections that never say hello cannot
/// either (the pending limit, with the hello timeout closing them), so other clients (a
/// device's mirror) are still served.
final class ConnectionSlots: Sendable {
    private struct Counts {
        var total = 0
        var pending = 0
        var perPeer: [Int32: Int] = [:]
    }
    private let counts = Mutex(Counts())
    private let limit: Int
    private let perPeerLimit: Int
    private let pendingLimit: Int

    init(configuration: ServiceConfiguration) {
        limit = configuration.maxConnections
        perPeerLimit = configuration.maxConnectionsPerPeer
        pendingLimit = configuration.maxPendingConnections
    }

    /// Takes a slot for a new connection of `pid`, or says why not.
    func take(pid: Int32) -> WireError? {
        counts.withLock { counts -> WireError? in
            if counts.total >= limit {
                return WireError(.tooManyConnections, "The service already serves \(limit) connections (--max-connections). Close one or raise the limit.",
                                 details: ["limit": .int(limit), "reason": "total"])
            }
            if counts.perPeer[pid, default: 0] >= perPeerLimit {
                return WireError(.tooManyConnections, "Your process (pid \(pid)) already holds \(perPeerLimit) connections (--max-connections-per-peer). Close one or raise the limit.",
                                 details: ["limit": .int(perPeerLimit), "reason": "perPeer"])
            }
            if counts.pending >= pendingLimit {
                return WireError(.tooManyConnections, "\(pendingLimit) connections are waiting to say hello (--max-pending-connections). Retry shortly.",
                                 details: ["limit": .int(pendingLimit), "reason": "pending"])
            }
            counts.total += 1
            counts.pending += 1
            counts.perPeer[pid, default: 0] += 1
            return nil
        }
    }

    /// The connection completed hello: it no longer counts as pending.
    func greeted() {
        counts.withLock { $0.pending -= 1 }
    }

    /// Gives the slot back; `greeted` says whether `greeted()` was called for it.
    func release(pid: Int32, greeted: Bool) {
        counts.withLock { counts in
            counts.total -= 1
            if !greeted { counts.pending -= 1 }
            let left = counts.perPeer[pid, default: 1] - 1
            counts.perPeer[pid] = left > 0 ? left : nil
        }
    }
}
