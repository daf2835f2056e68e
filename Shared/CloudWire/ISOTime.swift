/// An instant to the nanosecond, in integers: whole seconds since 1970-01-01T00:00:00Z (rounded
/// toward the past) and the nanoseconds after them. Text is converted through it rather than
/// through a `Double`, whose binary fraction turns `.999` into `.998999…` and so loses a
/// millisecond when it is cut back to milliseconds.
package struct ISOInstant: Hashable, Sendable, Comparable {
    package var seconds: Int64
    /// 0 ..< 1_000_000_000.
    package var nanoseconds: Int64

    package init(seconds: Int64, nanoseconds: Int64 = 0) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// Milliseconds since 1970, digits past the millisecond dropped (toward the past).
    package var milliseconds: Int64 { seconds * 1000 + nanoseconds / 1_000_000 }

    /// The nearest double to the instant in seconds. A whole number of milliseconds (every
    /// stored date) is one correctly rounded division, so `(value * 1000).rounded()` gives the
    /// milliseconds back exactly; finer instants are as close as a double holds them.
    package var secondsSince1970: Double {
        if nanoseconds % 1_000_000 == 0 { return Double(milliseconds) / 1000 }
        let micros = seconds.multipliedReportingOverflow(by: 1_000_000)
        if nanoseconds % 1000 == 0, !micros.overflow, abs(micros.partialValue) < 1 << 53 {
            return Double(micros.partialValue + nanoseconds / 1000) / 1_000_000
        }
        return Double(seconds) + Double(nanoseconds) / 1_000_000_000
    }

    package static func < (lhs: ISOInstant, rhs: ISOInstant) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
}

/// ISO-8601 text ⇄ instants, in integer arithmetic and without Foundation's calendar machinery.
///
/// Read: `YYYY-MM-DDTHH:MM:SS[.f…](Z|±HH:MM)` — a real proleptic Gregorian day (29 February only
/// in leap years), hours 00–23, seconds 00–59, 1 to 9 fraction digits, an offset up to ±23:59.
/// Written: UTC with `Z` and a fixed number of fraction digits.
///
/// Why: the mirror converts every date field of every record, and history timestamps carry the
/// edit times of the latest-edit policy, which need sub-millisecond resolution — two devices
/// editing within one millisecond would otherwise tie and be decided by device name.
package enum ISOTime {
    /// The instant `text` names, or nil when it is not a date-time of the shape above.
    package static func instant(_ text: String) -> ISOInstant? {
        var text = text
        return text.withUTF8 { instant(utf8: $0) }
    }

    /// Seconds since 1970 for an ISO-8601 date-time (see `ISOInstant.secondsSince1970`), or nil.
    package static func seconds(_ text: String) -> Double? {
        instant(text)?.secondsSince1970
    }

    /// `instant` as `YYYY-MM-DDTHH:MM:SS.fffZ` with `fractionDigits` (1…9) digits, later digits
    /// dropped; empty outside the four-digit years 0000–9999 the shape has.
    package static func string(_ instant: ISOInstant, fractionDigits: Int = 3) -> String {
        let digits = min(9, max(1, fractionDigits))
        let divisor = pow10(9 - digits)
        return string(whole: instant.seconds, fraction: instant.nanoseconds / divisor, digits: digits)
    }

    /// `seconds` as `YYYY-MM-DDTHH:MM:SS.fffZ` (3 digits) or with `fractionDigits` (1…9), rounded
    /// to the nearest unit of the last digit. Empty (which no date parser accepts) for a time too
    /// far out to count in units of the fraction, or outside the four-digit years 0000–9999 the
    /// shape has: a record from elsewhere can carry any double, and it must be refused, not trap
    /// or be misspelt.
    package static func string(seconds: Double, fractionDigits: Int = 3) -> String {
        let digits = min(9, max(1, fractionDigits))
        let scale = pow10(digits)
        let units = (seconds * Double(scale)).rounded()
        guard units.isFinite, let total = Int64(exactly: units) else { return "" }
        var whole = total / scale
        var fraction = total % scale
        if fraction < 0 { fraction += scale; whole -= 1 }
        return string(whole: whole, fraction: fraction, digits: digits)
    }

    private static func string(whole: Int64, fraction: Int64, digits: Int) -> String {
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

    private static func instant(utf8 b: UnsafeBufferPointer<UInt8>) -> ISOInstant? {
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= b.count else { return nil }
            var value: Int64 = 0
            for index in start..<(start + count) {
                guard b[index] >= 48, b[index] <= 57 else { return nil }
                value = value * 10 + Int64(b[index] - 48)
            }
            return value
        }
        guard b.count >= 20, b[4] == 45, b[7] == 45, b[10] == UInt8(ascii: "T"), b[13] == 58, b[16] == 58,
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
              let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var nanoseconds: Int64 = 0
        if b[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < b.count, b[index] >= 48, b[index] <= 57 { index += 1 }
            let count = index - start
            guard (1...9).contains(count), let fraction = number(start, count) else { return nil }
            nanoseconds = fraction * pow10(9 - count)
        }
        guard index < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch b[index] {
        case UInt8(ascii: "Z"):
            guard index + 1 == b.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == b.count, b[index + 3] == 58, let hours = number(index + 1, 2), let minutes = number(index + 4, 2),
                  hours < 24, minutes < 60 else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (b[index] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        let local = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return ISOInstant(seconds: local - offsetSeconds, nanoseconds: nanoseconds)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func pow10(_ n: Int) -> Int64 {
        var value: Int64 = 1
        for _ in 0..<n { value *= 10 }
        return value
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    package static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day number (inverse of `daysFromCivil`).
    package static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
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
