import CloudWire
import FoundationEssentials

/// Binary values' wire form (RFC 4648 base64, padded) read into bytes in one pass and one
/// allocation: checking the text, decoding it into `Data` and copying that into an array took
/// three passes and two allocations for every thumbnail of a bulk insert.
enum Base64Text {
    /// The bytes of `text`, or nil when it is not padded base64 (`FieldValueRules.isBase64`).
    static func bytes(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { utf8 -> [UInt8]? in
            guard FieldValueRules.isBase64(utf8) else { return nil }
            var padding = 0
            if utf8.last == UInt8(ascii: "=") { padding += 1 }
            if utf8.count >= 2, utf8[utf8.count - 2] == UInt8(ascii: "=") { padding += 1 }
            let count = utf8.count / 4 * 3 - padding
            var unusedBitsSet = false
            let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
                var at = 0
                var group = 0
                while group < utf8.count {
                    let a = value(utf8[group]), b = value(utf8[group + 1]), c = value(utf8[group + 2]), d = value(utf8[group + 3])
                    let word = a << 18 | b << 12 | c << 6 | d
                    out[at] = UInt8(truncatingIfNeeded: word >> 16)
                    if at + 1 < count { out[at + 1] = UInt8(truncatingIfNeeded: word >> 8) }
                    if at + 2 < count { out[at + 2] = UInt8(truncatingIfNeeded: word) }
                    at += 3
                    group += 4
                }
                // The last group's bits past the last byte.
                if padding == 1 { unusedBitsSet = value(utf8[utf8.count - 2]) & 0x03 != 0 }
                if padding == 2 { unusedBitsSet = value(utf8[utf8.count - 3]) & 0x0F != 0 }
                initialized = count
            }
            // Text whose unused bits are not zero is not what an encoder writes: read it as
            // Foundation does, whatever it makes of it.
            if unusedBitsSet { return Data(base64Encoded: String(decoding: utf8, as: UTF8.self)).map { [UInt8]($0) } }
            return bytes
        }
    }

    /// A base64 digit's six bits ('=' reads as zero; the caller has checked the text).
    @inline(__always)
    private static func value(_ byte: UInt8) -> UInt32 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(byte - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(byte - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return 0
        }
    }
}
