import Foundation
import MeowWire
@testable import ServiceRuntime
import Testing

/// A log line written straight from its tree (LogLineText) must be the line the sorted-keys
/// encoder wrote before, byte for byte: people and tools grep these lines.
@Suite("log lines written without Encodable")
struct LogLineTextTests {
    @Test("a line's text is JSONTextEncoder's sorted-keys text of the same entry",
          arguments: [
              ["ts": "2026-12-07T01:02:03.004Z", "level": "info", "label": "store-service", "msg": "ready"],
              ["msg": "hello", "connection": 3, "client": "MeowCareTesting A", "user": .null],
              ["b": true, "a": false, "z": ["nested": ["y": 1, "x": [1, 2.5, "s", .null]]], "é": "ü/\"\\\n\t\u{1}"],
              ["doubles": [1.0, 0.1, 1e20, -0.0, 1e15, 123456789012345.0, -2.5e-7, 1.7976931348623157e308]],
              ["empty": [:], "list": [], "Key": 1, "key": 2, "_k": 3, "10": 4, "9": 5],
          ] as [[String: JSONValue]])
    func textAsEncoded(entry: [String: JSONValue]) throws {
        #expect(LogLineText.text(entry) == (try JSONTextEncoder(options: .sortedKeys).text(entry)))
    }

    @Test("a line with a number JSON cannot hold is refused, as the encoder refused it")
    func nonFiniteRefused() {
        for bad: JSONValue in [.double(.nan), .double(.infinity), ["deep": [.double(-.infinity)]]] {
            let entry: [String: JSONValue] = ["msg": "x", "value": bad]
            #expect(LogLineText.text(entry) == nil)
            #expect((try? JSONTextEncoder(options: .sortedKeys).text(entry)) == nil)
        }
    }
}
