import Foundation
import Synchronization

/// Independent pieces of a service's start-up run at once: each but the first on a thread of its
/// own (it inherits the process's scheduling), the first on the caller's. A service starts while
/// the machine's other CPU is often idle (its siblings in a test cluster are still loading), so
/// two stores opened side by side are ready in about the time of one.
public enum AllAtOnce {
    /// Each piece's result, in the order given, once every piece has ended (also after one threw).
    /// Inlinable, and plain index loops: unspecialised, the generic code's first run looked its
    /// types up by name (slices, results), a sixth of a millisecond of each start.
    @inlinable
    public static func run<T: Sendable>(_ pieces: [@Sendable () throws -> T]) -> [Result<T, any Error>] {
        guard !pieces.isEmpty else { return [] }
        let results = Mutex([Result<T, any Error>?](repeating: nil, count: pieces.count))
        let done = DispatchSemaphore(value: 0)
        for index in 1..<pieces.count {
            let piece = pieces[index]
            let thread = Thread {
                let result = Result { try piece() }
                results.withLock { $0[index] = result }
                done.signal()
            }
            thread.start()
        }
        let first = Result { try pieces[0]() }
        results.withLock { $0[0] = first }
        for _ in 1..<pieces.count { done.wait() }
        return results.withLock { $0.map { $0! } }
    }
}
