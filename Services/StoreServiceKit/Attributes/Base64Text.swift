import CloudWire
import FoundationEssentials

/// Binary values' wire form (RFC 4648 base64, padded) checked and decoded in one pass. It
/// accepts exactly the texts `FieldValueRules.isBase64` accepts (AttributeTextFormsTests holds
/// the two to each other): the standard alphabet, a length that is a multiple of four, and at
/// most two `=`, only at the end.
enum Base64Text {
    /// The bytes of `text`, or nil when it is not padded base64.
    static func bytes(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { bytes($0) }
    }

    static func bytes(_ utf8: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard let count = decodedCount(utf8) else { return nil }
        guard count > 0 else { return [] }
        // A thumbnail-sized value is decoded on the stack and copied into its array: making an
        // array of a given capacity directly goes through the runtime's unspecialised
        // allocation, which looks up the array type's metadata on every call and cost more
        // than decoding 256 bytes.
        let decoded: Decoded
        var array: [UInt8] = []
        if count <= 1024 {
            decoded = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { out in
                let decoded = decode(utf8, into: out)
                if decoded == .bytes { array = Array(out) }
                return decoded
            }
        } else {
            var result = Decoded.invalid
            array = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
                result = decode(utf8, into: out)
                initialized = result == .bytes ? count : 0
            }
            decoded = result
        }
        switch decoded {
        case .bytes: return array
        case .invalid: return nil
        // Text whose unused bits are not zero is not what an encoder writes: read it as
        // Foundation does, whatever it makes of it.
        case .unusedBitsSet: return Data(base64Encoded: String(decoding: utf8, as: UTF8.self)).map { [UInt8]($0) }
        }
    }

    private enum Decoded { case bytes, invalid, unusedBitsSet }

    /// The number of bytes `utf8` decodes to, or nil when its length is not a multiple of four.
    private static func decodedCount(_ utf8: UnsafeBufferPointer<UInt8>) -> Int? {
        guard utf8.count % 4 == 0 else { return nil }
        return utf8.count / 4 * 3 - padding(utf8)
    }

    /// The `=` that may end the last group ("xx==" or "xxx="); any other `=` is refused as a
    /// byte outside the alphabet.
    private static func padding(_ utf8: UnsafeBufferPointer<UInt8>) -> Int {
        let length = utf8.count
        guard length >= 4, utf8[length - 1] == equals else { return 0 }
        return utf8[length - 2] == equals ? 2 : 1
    }

    /// Decodes `utf8` (its length a multiple of four) into `out`, which holds exactly
    /// `decodedCount(utf8)` bytes.
    private static func decode(_ utf8: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> Decoded {
        digitBits.withUnsafeBufferPointer { table in
            // A group of four digits as the 24 bits they stand for, from one table per place;
            // a byte outside the alphabet (`=` in a full group included) sets `invalidBit`.
            func bits(_ a: UInt8, _ b: UInt8, _ c: UInt8 = UInt8(ascii: "A"), _ d: UInt8 = UInt8(ascii: "A")) -> UInt32 {
                table[Int(a)] | table[256 + Int(b)] | table[512 + Int(c)] | table[768 + Int(d)]
            }
            let padding = padding(utf8)
            var invalid: UInt32 = 0
            var at = 0
            var group = 0
            let fullGroups = padding == 0 ? utf8.count : utf8.count - 4
            while group < fullGroups {
                let word = bits(utf8[group], utf8[group + 1], utf8[group + 2], utf8[group + 3])
                invalid |= word
                out[at] = UInt8(truncatingIfNeeded: word >> 16)
                out[at + 1] = UInt8(truncatingIfNeeded: word >> 8)
                out[at + 2] = UInt8(truncatingIfNeeded: word)
                at += 3
                group += 4
            }
            var unusedBitsSet = false
            if padding > 0 {
                // With one `=` the third digit is data; with two it is the first `=` ('A' reads as zero).
                let word = padding == 1 ? bits(utf8[group], utf8[group + 1], utf8[group + 2]) : bits(utf8[group], utf8[group + 1])
                invalid |= word
                out[at] = UInt8(truncatingIfNeeded: word >> 16)
                if padding == 1 { out[at + 1] = UInt8(truncatingIfNeeded: word >> 8) }
                // The last digit's bits past the last byte.
                unusedBitsSet = word & (padding == 1 ? 0xFF : 0xFFFF) != 0
            }
            if invalid & invalidBit != 0 { return .invalid }
            return unusedBitsSet ? .unusedBitsSet : .bytes
        }
    }

    private static let equals = UInt8(ascii: "=")

    private static let invalidBit: UInt32 = 1 << 24

    /// Four tables of 256: a byte's six bits as a base64 digit in the first, second, third or
    /// fourth place of a group (shifted to where they stand in its 24 bits), or `invalidBit` for
    /// any other byte (`=` included).
    private static let digitBits: [UInt32] = (0..<4).flatMap { place in
        (0...255).map { byte -> UInt32 in
            let sextet: UInt32
            switch UInt8(byte) {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): sextet = UInt32(byte) - UInt32(UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): sextet = UInt32(byte) - UInt32(UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sextet = UInt32(byte) - UInt32(UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): sextet = 62
            case UInt8(ascii: "/"): sextet = 63
            default: return invalidBit
            }
            return sextet << (18 - 6 * place)
        }
    }
}
