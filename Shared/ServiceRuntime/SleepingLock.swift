#if canImport(Glibc)
import Glibc
#endif

/// A lock whose waiters sleep, for critical sections that last a whole SQLite transaction.
///
/// `Synchronization.Mutex` is a priority-inheritance futex on Linux, and the kernel spins a
/// waiter on such a lock (`rt_mutex_spin_on_owner`) for as long as the owner stays on a CPU.
/// That is right for the short sections it is made for; around a transaction of milliseconds
/// it burns a core whenever a device's save and its mirror's send meet on the coordinator.
/// A plain pthread mutex waits in `futex_wait`: the waiter gives its core to the owner, or to
/// the other processes of the deployment.
public final class SleepingLock: @unchecked Sendable {
    // @unchecked: the pthread mutex is the synchronisation; its storage is allocated once and
    // never moves.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value behind a `SleepingLock`.
public final class SleepingMutex<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only read and written inside `lock`.
    private let lock = SleepingLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}
