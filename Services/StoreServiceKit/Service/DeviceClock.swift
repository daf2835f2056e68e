import FoundationEssentials
import Synchronization

/// The device's wall clock: what it stamps on history, share metadata and cloudKitEvents, and
/// what retry-after deferrals and the automatic mode's back-off are measured against.
///
/// A test sets it (`clock.set`) to reach a deferral's end or a date in milliseconds. It keeps
/// running from the reading it was given, as a device's clock does: two saves on a set clock
/// still get increasing history times, which the latest-edit policy orders edits by.
public final class DeviceClock: Sendable {
    private let offset = Mutex<Double>(0)

    public init() {}

    /// Seconds since 1970.
    public func seconds() -> Double {
        Date().timeIntervalSince1970 + offset.withLock { $0 }
    }

    public func date() -> Date {
        Date(timeIntervalSince1970: seconds())
    }

    /// How far this clock is from the real one (0: not set).
    public var offsetSeconds: Double { offset.withLock { $0 } }

    /// Makes the clock read `now` (seconds since 1970) from here on; nil: the real clock again.
    public func set(now: Double?) {
        let real = Date().timeIntervalSince1970
        offset.withLock { $0 = now.map { $0 - real } ?? 0 }
    }

    /// Moves the clock `seconds` forward (or back, when negative).
    public func advance(by seconds: Double) {
        offset.withLock { $0 += seconds }
    }
}
