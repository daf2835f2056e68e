#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// SIGTERM/SIGINT start a graceful shutdown; SIGPIPE is ignored (writes use MSG_NOSIGNAL too).
/// Lives outside main.swift: a Dispatch signal source made at top level crashes on delivery.
public enum ShutdownSignals {
    /// Keeps the sources alive for the life of the process. DispatchSource is not Sendable;
    /// the array is only appended to, under the lock, and never read.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    private static let lock = Mutex(())

    public static func install(_ onSignal: @escaping @Sendable (Int32) -> Void) {
        signal(SIGPIPE, SIG_IGN)
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { onSignal(number) }
            source.resume()
            lock.withLock { _ in sources.append(source) }
        }
    }
}
