extension MessageReader {
    /// An `Int` as `JSONValueDecoder` takes one: a whole number, or a double that is exactly one
    /// (`1.0`), refused in its words otherwise, so a reader of params reports what the
    /// Decodable route reported.
    public mutating func integerAsDecoded() throws(MessageReadError) -> Int {
        if readNull() { throw error(.null(.integer)) }
        return try wholeNumber()
    }

    /// As `integerAsDecoded`, null being nil.
    public mutating func optionalIntegerAsDecoded() throws(MessageReadError) -> Int? {
        if readNull() { return nil }
        return try wholeNumber()
    }

    private mutating func wholeNumber() throws(MessageReadError) -> Int {
        switch try value() {
        case let .int(number): return number
        case let .double(number):
            guard let whole = Int(exactly: number) else { throw invalid("Number \(number) is not representable as Int.") }
            return whole
        default: throw error(.expected(.integer))
        }
    }
}
