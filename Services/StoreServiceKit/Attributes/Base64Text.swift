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
        sextets.withUnsafeBufferPointer { table in
            func sextet(_ byte: UInt8) -> UInt8 { table[Int(byte)] }
            let padding = padding(utf8)
            // Every digit's six bits or-ed into `invalid`: a byte outside the alphabet (`=` in a
            // full group included) sets its 0x80 bit.
            var invalid: UInt8 = 0
            var at = 0
            var group = 0
            let fullGroups = padding == 0 ? utf8.count : utf8.count - 4
            while group < fullGroups {
                let a = sextet(utf8[group]), b = sextet(utf8[group + 1]), c = sextet(utf8[group + 2]), d = sextet(utf8[group + 3])
                invalid |= a | b | c | d
                out[at] = a << 2 | b >> 4
                out[at + 1] = b << 4 | c >> 2
                out[at + 2] = c << 6 | d
                at += 3
                group += 4
            }
            var unusedBitsSet = false
            if padding > 0 {
                let a = sextet(utf8[group]), b = sextet(utf8[group + 1])
                // With one `=` the third digit is data; with two it is the first `=`.
                let c = padding == 1 ? sextet(utf8[group + 2]) : 0
                invalid |= a | b | c
                out[at] = a << 2 | b >> 4
                if padding == 1 { out[at + 1] = b << 4 | c >> 2 }
                // The last digit's bits past the last byte.
                unusedBitsSet = padding == 1 ? c & 0x03 != 0 : b & 0x0F != 0
            }
            if invalid & 0x80 != 0 { return .invalid }
            return unusedBitsSet ? .unusedBitsSet : .bytes
        }
    }

    private static let equals = UInt8(ascii: "=")

    /// Each byte's six bits as a base64 digit, or 0xFF for any other byte (`=` included).
    private static let sextets: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt8(byte) - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt8(byte) - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt8(byte) - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return 0xFF
        }
    }
}
