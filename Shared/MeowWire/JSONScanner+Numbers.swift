/// JSON numbers, by the grammar's rules: the tokens' number and the skip's check of one.
extension JSONScanner {
    /// The number here: `.int` without fraction or exponent when it fits an `Int`, otherwise
    /// `.double`; one too large for a Double is an error.
    mutating func readNumber() throws(JSONParser.Failure) -> JSONValue {
        let number = try scanNumber()
        if let integer = number.integer { return .int(integer) }
        guard let value = Self.double(bytes, number.start..<index) else {
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[number.start..<index]), as: UTF8.self)
            throw failure("number \(text.prefix(40)) is out of range", at: number.start)
        }
        return .double(value)
    }

    /// Past the number here by the JSON grammar: where it started, its value when it is an
    /// integer that fits an `Int`, and whether it has an exponent.
    mutating func scanNumber() throws(JSONParser.Failure) -> (start: Int, integer: Int?, exponent: Bool) {
        let start = index
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { negative = true; index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("a number needs digits") }
        // Accumulate as a negative value so Int.min parses; overflow falls back to Double.
        var accumulated = 0
        var overflow = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw failure("leading zeros are not allowed") }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let digit = Int(bytes[index] - UInt8(ascii: "0"))
                if !overflow {
                    let (times, o1) = accumulated.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times.subtractingReportingOverflow(digit)
                    if o1 || o2 { overflow = true } else { accumulated = next }
                }
                index += 1
            }
        }
        var integral = true, exponent = false
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("a fraction needs digits") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            exponent = true
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("an exponent needs digits") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        var integer: Int?
        if integral, !overflow {
            if negative { integer = accumulated } else if accumulated != Int.min { integer = -accumulated }
        }
        return (start, integer, exponent)
    }

    /// The finite Double `range` spells, if it is one.
    static func double(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Double? {
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else { return nil }
        return number
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
