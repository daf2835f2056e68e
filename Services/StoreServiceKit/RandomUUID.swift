#if canImport(Glibc)
import Glibc
#endif

/// Random (version 4) UUID strings without Foundation's UUID(), which opens /dev/urandom on
/// every call on Linux: a 1,000-object insert needs 1,000 ids, and 1,000 open/read/close
/// triples showed up as a tenth of a save's cost. Random bytes are read from /dev/urandom in
/// 4 KiB batches. Not thread-safe: each context owns one.
struct RandomUUIDSource {
    private var buffer = [UInt8](repeating: 0, count: 4096)
    private var offset = 4096

    mutating func next() -> String {
        if offset + 16 > buffer.count { refill() }
        var bytes = Array(buffer[offset..<(offset + 16)])
        offset += 16
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

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
