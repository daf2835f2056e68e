import Synchronization

/// A connection's commits that wrote to its log, by whether each waited for the disk
/// (`synchronous=FULL`) or not (a deferred transaction's NORMAL). Counted by the WAL hook, on
/// the committing thread; read from any thread. A commit that changed no page writes no log
/// and is not counted.
public final class CommitLedger: Sendable {
    private let durableCount = Atomic<Int>(0)
    private let relaxedCount = Atomic<Int>(0)
    private let relaxedMode = Atomic<Bool>(false)

    /// Whether commits now skip waiting for the disk (set by the connection's owner).
    var relaxed: Bool {
        get { relaxedMode.load(ordering: .relaxed) }
        set { relaxedMode.store(newValue, ordering: .relaxed) }
    }

    func count() {
        if relaxed { relaxedCount.add(1, ordering: .relaxed) } else { durableCount.add(1, ordering: .relaxed) }
    }

    /// Commits that waited for the disk, and commits that did not.
    public var counts: (durable: Int, relaxed: Int) {
        (durableCount.load(ordering: .relaxed), relaxedCount.load(ordering: .relaxed))
    }
}
