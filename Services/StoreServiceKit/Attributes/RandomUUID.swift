#if canImport(Glibc)
import Glibc
#endif

/// Object uuids (a record's name in the cloud) as RFC 9562 version 7 UUIDs: a 48-bit Unix time
/// in milliseconds, then a 12-bit counter, then 62 random bits.
///
/// Why time-ordered rather than Foundation's random version 4, which Core Data uses: every
/// uuid lands in a B-tree index, on the device (the entity's `z_uuid`, the mirror's queue and
/// metadata), in the cloud (record names) and on every device that imports the record. Random
/// keys put each insert on a random leaf page, so a batch of 400 records dirtied most of each
/// index and a send wrote 4 KiB per record; time-ordered keys append, and it wrote 1.5 KiB.
/// Nothing reads meaning into a record name, so the cloud and other devices see a UUID as
/// before (docs/differences-core-data.md).
///
/// Within one source uuids strictly increase (RFC 9562 §6.2 method 1: the counter is seeded at
/// random in each new millisecond and counts up within it; when it runs out, or the clock
/// steps back, the time is carried forward). Without Foundation's UUID(), which opens
/// /dev/urandom on every call on Linux: a 1,000-object insert needs 1,000 ids, and a file
/// open per id would cost as much as a tenth of the save. Random bytes are read in 4 KiB batches.
/// Not thread-safe: each context owns one.
struct RandomUUIDSource {
    private var buffer = [UInt8](repeating: 0, count: 4096)
    private var offset = 4096
    private var lastMillis: UInt64 = 0
    private var counter: UInt16 = 0
    /// The clock, in milliseconds since 1970 (a test sets one that stands still or steps back).
    private let clock: @Sendable () -> UInt64

    init(clock: @escaping @Sendable () -> UInt64 = RandomUUIDSource.systemMillis) {
        self.clock = clock
    }

    static func systemMillis() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(max(0, now.tv_sec)) &* 1000 &+ UInt64(max(0, now.tv_nsec) / 1_000_000)
    }

    mutating func next() -> String {
        if offset + 16 > buffer.count { refill() }
        let now = clock()
        let random6 = buffer[offset + 6], random7 = buffer[offset + 7]
        if now > lastMillis {
            lastMillis = now
            // The top bit left clear, so that a millisecond has at least 2,048 ids to count.
            counter = UInt16(random6 & 0x07) << 8 | UInt16(random7)
        } else if counter < 0x0FFF {
            counter += 1
        } else {
            lastMillis += 1
            counter = UInt16(random6 & 0x07) << 8 | UInt16(random7)
        }
        // The 16 bytes as two words, written as hex on the stack and made into a string by
        // String(decoding:)'s ASCII path: cheaper than filling a string's storage in place,
        // which String(unsafeUninitializedCapacity:) validates and repairs afterwards.
        let high = lastMillis << 16 | 0x7000 | UInt64(counter)
        var low: UInt64 = 0
        for index in 8..<16 { low = low << 8 | UInt64(buffer[offset + index]) }
        low = low & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        offset += 16
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
            var written = 0
            for index in 0..<16 {
                // Dashes after bytes 4, 6, 8 and 10 of the 16.
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[written] = UInt8(ascii: "-")
                    written += 1
                }
                let byte = UInt8(truncatingIfNeeded: (index < 8 ? high : low) >> (56 - 8 * (index & 7)))
                text[written] = Self.hexDigit(byte >> 4)
                text[written + 1] = Self.hexDigit(byte & 0x0F)
                written += 2
            }
            return String(decoding: UnsafeBufferPointer(text), as: UTF8.self)
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x37 + value }

    private mutating func refill() {
        var filled = 0
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            buffer.withUnsafeMutableBytes { raw in
                while filled < raw.count {
                    let n = read(fd, raw.baseAddress! + filled, raw.count - filled)
                    if n > 0 { filled += n } else if n < 0 && errno == EINTR { continue } else { break }
                }
            }
            close(fd)
        }
        if filled < buffer.count {
            var generator = SystemRandomNumberGenerator()
            for index in filled..<buffer.count { buffer[index] = generator.next() }
        }
        offset = 0
    }
}
