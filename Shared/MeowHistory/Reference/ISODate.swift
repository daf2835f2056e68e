/// Reads the store's date text (ISO 8601, `2026-07-27T09:30:00.000Z` or with an offset) as the
/// cloud holds a date: seconds since 1970, the double nearest to its milliseconds ÷ 1000. So a
/// date a device shows and the one its record carries compare as one value.
enum ISODate {
    static func seconds(_ text: String) -> Double? {
        let chars = Array(text.utf8)
        guard chars.count >= 20, chars[4] == UInt8(ascii: "-"), chars[7] == UInt8(ascii: "-"), chars[10] == UInt8(ascii: "T"),
              chars[13] == UInt8(ascii: ":"), chars[16] == UInt8(ascii: ":"),
              let year = number(chars, 0, 4), let month = number(chars, 5, 2), let day = number(chars, 8, 2),
              let hour = number(chars, 11, 2), let minute = number(chars, 14, 2), let second = number(chars, 17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else { return nil }
        var index = 19
        var millis = 0
        if index < chars.count, chars[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < chars.count, let digit = digit(chars[index]) {
                if digits < 3 { millis = millis * 10 + digit }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        guard index < chars.count else { return nil }
        var offset = 0
        if chars[index] == UInt8(ascii: "Z") {
            index += 1
        } else if chars[index] == UInt8(ascii: "+") || chars[index] == UInt8(ascii: "-") {
            guard index + 6 == chars.count, chars[index + 3] == UInt8(ascii: ":"),
                  let hours = number(chars, index + 1, 2), let minutes = number(chars, index + 4, 2) else { return nil }
            offset = (hours * 60 + minutes) * 60 * (chars[index] == UInt8(ascii: "+") ? 1 : -1)
            index += 6
        } else {
            return nil
        }
        guard index == chars.count else { return nil }
        let seconds = days(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second - offset
        return Double(seconds * 1_000 + millis) / 1_000
    }

    static func digit(_ char: UInt8) -> Int? {
        char >= UInt8(ascii: "0") && char <= UInt8(ascii: "9") ? Int(char - UInt8(ascii: "0")) : nil
    }

    static func number(_ chars: [UInt8], _ start: Int, _ count: Int) -> Int? {
        var value = 0
        for index in start..<(start + count) {
            guard let digit = digit(chars[index]) else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    /// Days from 1970-01-01 to the date (the proleptic Gregorian calendar).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
