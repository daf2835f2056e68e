/// The value rules both services apply to record fields and attribute values, so a value one
/// accepts the other can hold: bytes are base64 and dates lie in years 0001–9999. A negative
/// zero is accepted, as Core Data and CloudKit accept it, and kept as 0: a store's REAL column
/// turns it into 0.0 (`storedReal`), and a record's stored form writes a whole double as an
/// integer.
public enum FieldValueRules {
    /// 0001-01-01T00:00:00Z in seconds since 1970: the earliest date a field may hold.
    public static let earliestDate: Double = -62_135_596_800
    /// 10000-01-01T00:00:00Z: dates must be before it (the last is in 9999).
    public static let dateEnd: Double = 253_402_300_800

    public static let dateRangeText = "years 0001–9999 (-62135596800 ≤ seconds since 1970 < 253402300800)"

    public static func isDateInRange(_ seconds: Double) -> Bool {
        seconds >= earliestDate && seconds < dateEnd
    }

    /// A double or float attribute's value as a store keeps it: -0.0 becomes 0.0. Core Data's
    /// SQLite store, like ours, keeps such an attribute in a REAL column, and SQLite writes a
    /// whole-valued REAL (-0.0 included) as the integer 0 and reads it back as 0.0; converting
    /// here makes a save's own context agree with every later fetch.
    public static func storedReal(_ number: Double) -> Double {
        number == 0 ? 0 : number
    }

    /// Whether `text` is base64 as RFC 4648 writes it: the standard alphabet, a length that is a
    /// multiple of four, and `=` padding only at the end (at most two).
    public static func isBase64(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isBase64($0) }
    }

    public static func isBase64(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count % 4 == 0 else { return false }
        var padding = 0
        for byte in bytes {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, isBase64Digit(byte) else { return false }
        }
        return padding <= 2
    }

    @inline(__always)
    static func isBase64Digit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "+"), UInt8(ascii: "/"): return true
        default: return false
        }
    }
}
