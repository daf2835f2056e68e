#if canImport(Glibc)
import Glibc
#endif

/// Change tags: 128 random bits as 26 base-36 digits, new on every write. A tag names a
/// version without revealing when it was written or letting anyone guess another version's tag
/// (a tag sent with a save brings back that version as `ancestorRecord`). Change tokens, not
/// tags, carry the write sequence.
///
/// Random bits are read from the kernel 4 KiB at a time (one read per 256 tags): a batch of
/// 400 saves makes 400 tags, and a system call per tag would show in its cost.
struct ChangeTags {
    private var pool: [UInt64] = []
    private var next = 0

    /// The number of base-36 digits of a UInt64 at most (`3w5e11264sgsf`).
    static let digitsPerWord = 13

    mutating func make() -> String {
        if next + 2 > pool.count { refill() }
        let high = pool[next], low = pool[next + 1]
        next += 2
        // Each word as exactly `digitsPerWord` digits, so two side by side read only one way.
        return String(unsafeUninitializedCapacity: 2 * Self.digitsPerWord) { buffer in
            Self.write(high, into: buffer, at: 0)
            Self.write(low, into: buffer, at: Self.digitsPerWord)
            return 2 * Self.digitsPerWord
        }
    }

    private static let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    private static func write(_ word: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        var rest = word
        for position in stride(from: start + digitsPerWord - 1, through: start, by: -1) {
            buffer[position] = digits[Int(rest % 36)]
            rest /= 36
        }
    }

    private mutating func refill() {
        var words = [UInt64](repeating: 0, count: 512)
        let filled = words.withUnsafeMutableBytes { buffer -> Bool in
            let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            var offset = 0
            while offset < buffer.count {
                let count = read(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        if !filled {
            // The standard library's generator reads the same kernel source, a word per call.
            var system = SystemRandomNumberGenerator()
            for index in words.indices { words[index] = system.next() }
        }
        pool = words
        next = 0
    }
}
