#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import ServiceRuntime
import Testing

/// A log line's `ts` is written without Foundation's format style (whose first use loads ICU's
/// time zones): the text must stay exactly what the format style writes.
@Suite struct LogTimestampTests {
    @Test("ts is ISO 8601 in UTC with milliseconds, as Date.ISO8601FormatStyle writes it", arguments: [
        (0, 0), (951_782_400, 7), (1_796_561_559, 507), (1_796_601_599, 999), (4_102_444_799, 120),
    ])
    func matchesTheFormatStyle(seconds: Int, milliseconds: Int) {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let date = Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000 + 0.0001)
        #expect(LogTimestamp.text(seconds: time_t(seconds), milliseconds: milliseconds) == date.formatted(style))
    }

    @Test("a logged line's ts reads back as the time it was written")
    func nowIsTheClock() throws {
        let before = Date().timeIntervalSince1970
        let text = LogTimestamp.now()
        let after = Date().timeIntervalSince1970
        let parsed = try #require(try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
        #expect(parsed.timeIntervalSince1970 >= before - 0.001 && parsed.timeIntervalSince1970 <= after + 0.001)
    }
}
