import FoundationEssentials

/// UTC ISO-8601 text ⇄ seconds since 1970, without Foundation's calendar machinery for the
/// canonical shape `YYYY-MM-DDTHH:MM:SS[.f…]Z` (what the store writes and most clients send);
/// other shapes (offsets) fall back to Foundation's parser.
///
/// Why: the mirror converts every date field of every record, and history timestamps carry the
/// edit times of the latest-edit policy, which need sub-millisecond resolution — two devices
/// editing within one millisecond would otherwise tie and be decided by device name.
package enum ISOTime {
    /// `seconds` as `YYYY-MM-DDTHH:MM:SS.fffZ` (3 digits) or with `fractionDigits` (1…9).
    /// Empty (which no date parser accepts) for a time too far out to count in units of the
    /// fraction, or outside the four-digit years 0000–9999 the shape has: a record from
    /// elsewhere can carry any double, and it must be refused, not trap or be misspelt.
    package static func string(seconds: Double, fractionDigits: Int = 3) -> String {
        let digits = min(9, max(1, fractionDigits))
        let scale = pow10(digits)
        let units = (seconds * Double(scale)).rounded()
        guard units.isFinite, let total = Int64(exactly: units) else { return "" }
        var whole = total / scale
        var fraction = total % scale
        if fraction < 0 { fraction += scale; whole -= 1 }
        var days = whole / 86_400
        var secondOfDay = whole % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (year, month, day) = civil(days: days)
        // Four-digit years only, as the canonical shape has (and as the parser reads back).
        guard (0...9999).contains(year) else { return "" }
        // Digits written into one small buffer (a string per part was most of the conversion,
        // and an import converts two dates per record).
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21 + digits) { buffer -> String in
            func put(_ value: Int64, width: Int, at offset: Int) {
                var rest = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(year, width: 4, at: 0); buffer[4] = UInt8(ascii: "-")
            put(month, width: 2, at: 5); buffer[7] = UInt8(ascii: "-")
            put(day, width: 2, at: 8); buffer[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, width: 2, at: 11); buffer[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, width: 2, at: 14); buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, width: 2, at: 17); buffer[19] = UInt8(ascii: ".")
            put(fraction, width: digits, at: 20); buffer[20 + digits] = UInt8(ascii: "Z")
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[0..<(21 + digits)]), as: UTF8.self)
        }
    }

    /// Seconds since 1970 for an ISO-8601 date-time, or nil when it is not one.
    package static func seconds(_ text: String) -> Double? {
        if let fast = canonicalSeconds(Array(text.utf8)) { return fast }
        let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let plain = Date.ISO8601FormatStyle()
        return ((try? withFraction.parse(text)) ?? (try? plain.parse(text)))?.timeIntervalSince1970
    }

    private static func canonicalSeconds(_ b: [UInt8]) -> Double? {
        guard b.count >= 20, b.count <= 30, b.last == UInt8(ascii: "Z"), b[4] == 45, b[7] == 45, b[10] == UInt8(ascii: "T"),
              b[13] == 58, b[16] == 58 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard b[index] >= 48, b[index] <= 57 else { return nil }
                value = value * 10 + Int64(b[index] - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fraction = 0.0
        if b.count > 20 {
            guard b[19] == UInt8(ascii: "."), b.count > 21, let digits = number(20..<(b.count - 1)) else { return nil }
            fraction = Double(digits) / Double(pow10(b.count - 21))
        } else if b[19] != UInt8(ascii: "Z") {
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second) + fraction
    }

    private static func pow10(_ n: Int) -> Int64 {
        var value: Int64 = 1
        for _ in 0..<n { value *= 10 }
        return value
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day number (inverse of `daysFromCivil`).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
