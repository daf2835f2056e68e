#if canImport(Glibc)
import Glibc
#endif
import CShim

/// How a service asks glibc's malloc to keep the memory it frees.
///
/// Why: by default glibc serves blocks from 128 KiB up with `mmap` (raising that bar to the
/// largest block freed, up to 32 MiB) and gives a heap's free top back to the kernel once it
/// exceeds twice that bar. The services allocate and free buffers of hundreds of kilobytes to
/// megabytes many times a second (a page of fetched records, a batch to save), so the same
/// memory would go back to the kernel and be faulted in again, zeroed, page by page. A service
/// keeps its heap instead; its resident size stays near its busiest moment, as a long-running
/// server's does. Frame buffers beyond 1 MiB
/// are the exception: they are mapped outside malloc (`FrameBytes` in MeowWire), so a peer's
/// half-sent large frames cannot leave hundreds of megabytes kept here after they close.
public enum MemoryTuning {
    /// Blocks below this come from the heap (glibc's own ceiling for the setting).
    public static let mmapThreshold: Int32 = 32 << 20
    /// Free memory at a heap's top beyond this is returned to the kernel.
    public static let trimThreshold: Int32 = 256 << 20

    /// Applies the thresholds unless the environment sets malloc's own tunables
    /// (`GLIBC_TUNABLES`, `MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`): whoever runs the
    /// service keeps the last word. Returns whether they were applied.
    @discardableResult
    public static func apply(environment: [String: String]) -> Bool {
        apply(unlessSet: { environment[$0] != nil })
    }

    /// `apply(environment:)` on the process's own environment, read with `getenv`: Foundation's
    /// `ProcessInfo` would copy every variable into a dictionary first (a few tenths of a
    /// millisecond of each start).
    @discardableResult
    public static func applyToProcess() -> Bool {
        apply(unlessSet: { getenv($0) != nil })
    }

    private static func apply(unlessSet isSet: (String) -> Bool) -> Bool {
        let userTunables = ["GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"]
        guard !userTunables.contains(where: isSet) else { return false }
        return meow_keep_freed_memory(mmapThreshold, trimThreshold) == 0
    }
}
