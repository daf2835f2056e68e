#if canImport(Glibc)
import CloudWire
import Glibc
#endif
import Dispatch
import Synchronization

/// The locks that let modifies of different zones overlap while one zone's stay serial.
///
/// Order, always: `structure` (shared for zone work, exclusive for whole-cloud work such as
/// reset and snapshot import), then the zone locks in sorted order, then a database
/// connection's lock. A modify decides on a read-only connection while holding its zones'
/// locks, so nothing can change those zones before it applies its plan on the writer.
final class WriteLocks: Sendable {
    let structure = ReadWriteLock()
    private let zones = Mutex([String: ZoneLock]())

    final class ZoneLock: Sendable {
        let semaphore = DispatchSemaphore(value: 1)
        let users = Atomic<Int>(0)
    }

    static func key(_ zone: ZoneID) -> String { "\(zone.ownerName)\u{0}\(zone.zoneName)" }

    /// Runs `body` holding the locks of `zones` (resolved zone IDs), under a shared structure lock.
    func withZones<T>(_ zones: [ZoneID], _ body: () throws -> T) throws -> T {
        try structure.shared {
            let keys = Set(zones.map(Self.key)).sorted()
            let locks = self.zones.withLock { table in
                keys.map { key -> ZoneLock in
                    let lock = table[key] ?? ZoneLock()
                    table[key] = lock
                    lock.users.add(1, ordering: .relaxed)
                    return lock
                }
            }
            for lock in locks { lock.semaphore.wait() }
            defer {
                for lock in locks.reversed() { lock.semaphore.signal() }
                self.zones.withLock { table in
                    for (key, lock) in zip(keys, locks) where lock.users.subtract(1, ordering: .relaxed).newValue == 0 {
                        table[key] = nil
                    }
                }
            }
            return try body()
        }
    }

    /// Runs `body` with no zone work in flight.
    func exclusive<T>(_ body: () throws -> T) throws -> T {
        try structure.exclusive(body)
    }
}

/// A pthread reader-writer lock.
final class ReadWriteLock: @unchecked Sendable {
    // @unchecked: the pthread lock is the synchronisation; its storage is allocated once and
    // never moves.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func shared<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
