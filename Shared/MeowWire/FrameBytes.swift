#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CShim

/// The memory a `FrameDecoder` holds bytes in: from malloc while small, and mapped from the
/// kernel (mmap, grown with mremap) once larger than `mappedThreshold`. A large buffer then
/// grows without copying, is resident only for the pages actually written (a frame announced
/// large but half sent costs the half), and goes back to the kernel when freed, whatever
/// malloc's settings (the services keep freed heap memory: `MemoryTuning`).
/// The decoder keeps the count and caches the address: reading a class's stored properties
/// is checked for exclusive access, and the decoder's per-frame path reads them every time.
final class FrameBytes: @unchecked Sendable {
    // @unchecked: owned by one FrameDecoder value at a time (copied before a shared one is changed).
    static let mappedThreshold = 1 << 20
    private(set) var base: UnsafeMutablePointer<UInt8>?
    private(set) var capacity = 0
    private var mapped = false

    init() {}

    deinit { release() }

    /// Grows the room to at least `minimum` bytes, keeping the first `count`.
    func reserve(_ minimum: Int, keeping count: Int) {
        guard minimum > capacity else { return }
        if minimum > Self.mappedThreshold {
            let size = Self.pageRounded(minimum)
            if mapped, let base {
                let moved = meow_remap(base, capacity, size)
                guard let moved, moved != MAP_FAILED else { fatalError("mremap of \(size) bytes failed: \(String(cString: strerror(errno)))") }
                self.base = moved.assumingMemoryBound(to: UInt8.self)
            } else {
                let region = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                guard let region, region != MAP_FAILED else { fatalError("mmap of \(size) bytes failed: \(String(cString: strerror(errno)))") }
                let fresh = region.assumingMemoryBound(to: UInt8.self)
                if let base, count > 0 { fresh.update(from: base, count: count) }
                if let base { free(base) }
                self.base = fresh
                mapped = true
            }
            capacity = size
        } else {
            guard let grown = realloc(base, minimum) else { fatalError("realloc of \(minimum) bytes failed") }
            base = grown.assumingMemoryBound(to: UInt8.self)
            capacity = minimum
        }
    }

    /// A separate copy of the first `count` bytes.
    func copy(count: Int) -> FrameBytes {
        let copy = FrameBytes()
        copy.reserve(max(count, 1), keeping: 0)
        if let base, let target = copy.base, count > 0 { target.update(from: base, count: count) }
        return copy
    }

    /// Gives the memory back.
    func release() {
        if let base {
            if mapped { munmap(base, capacity) } else { free(base) }
        }
        base = nil
        capacity = 0
        mapped = false
    }

    private static func pageRounded(_ size: Int) -> Int {
        let page = 4096
        return (size + page - 1) / page * page
    }
}
