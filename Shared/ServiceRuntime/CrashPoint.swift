#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Named places where the crash harness can kill a service, as kill -9 would (no clean-up, no
/// flush, no reply). Off unless the process was started with `MEOW_CRASH_AT=name` or
/// `MEOW_CRASH_AT=name:n` (the n-th time the point is reached; default the first).
///
/// Points: `store.midSave` (an inserted object of a save handed to SQLite — in a large save its
/// row may still be queued for the thread that steps rows — the save's transaction not committed),
/// `store.afterSaveCommit` (a save committed, its reply not sent), `sync.midBatch` (a record of a batch written on the server, its transaction not committed),
/// `sync.afterCommit` (a request's changes committed on the server, its reply not sent), and the mirror's
/// `mirror.afterServerReply` (the server committed and answered, the verdict not applied),
/// `mirror.midImport` (a record of a fetched page written, the page not committed) and
/// `mirror.afterApplyingPage` (a fetched page applied, its token not saved). docs/RELIABILITY.md
/// lists them for people.
public enum CrashPoint {
    private static let target: (name: String, hit: Int)? = {
        guard let spec = getenv("MEOW_CRASH_AT").map({ String(cString: $0) }), !spec.isEmpty else { return nil }
        let parts = spec.split(separator: ":", maxSplits: 1)
        return (String(parts[0]), parts.count == 2 ? max(1, Int(parts[1]) ?? 1) : 1)
    }()
    private static let hits = Mutex(0)

    /// Dies here if the harness asked for this point (and this is the n-th time it is reached).
    public static func reached(_ name: String) {
        guard let target, target.name == name else { return }
        let count = hits.withLock { $0 += 1; return $0 }
        guard count == target.hit else { return }
        Logger(label: "crash-point").rawLine(#"{"msg":"crash point reached; dying as kill -9 would","point":"\#(name)"}"#)
        raise(SIGKILL)
    }
}
