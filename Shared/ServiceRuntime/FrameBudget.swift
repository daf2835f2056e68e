import Synchronization

/// The bytes of unfinished frames buffered across all connections, against one budget: many
/// connections each sending half of a large frame cannot take the service's memory. The first
/// `freeBytesPerConnection` of each connection's buffer are not counted (one read's worth), so
/// ordinary requests never touch the shared counter.
final class FrameBudget: Sendable {
    static let freeBytesPerConnection = 64 * 1024
    let limit: Int
    private let used = Mutex(0)

    init(limit: Int) { self.limit = limit }

    /// Moves a connection's charge from `old` to `new` bytes; false (and nothing charged) when
    /// growing it would pass the limit.
    func recharge(from old: Int, to new: Int) -> Bool {
        used.withLock { used in
            if new > old, used + (new - old) > limit { return false }
            used += new - old
            return true
        }
    }

    /// What a connection holding `buffered` bytes is charged.
    static func charge(forBuffered buffered: Int) -> Int {
        buffered > freeBytesPerConnection ? buffered - freeBytesPerConnection : 0
    }

    var inUse: Int { used.withLock { $0 } }
}
