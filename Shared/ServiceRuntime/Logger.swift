#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import MeowWire
import Synchronization

/// A small logger shaped like swift-log's: a label, a level, a constant message, and data as
/// metadata. Each entry is one JSON object per line on stderr, so logs can be piped into jq.
///
/// ```swift
/// let log = Logger(label: "store-service.listener")
/// log.info("listening", ["socket": .string(path)])
/// ```
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        /// Spelled out: `String(describing:)` finds an enum case's name by reflection, whose
        /// first use checks the value against every protocol conformance in the process (half a
        /// millisecond before a service's first log line).
        public var name: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }
        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }
    }

    public let label: String
    public init(label: String) { self.label = label }

    /// The minimum level written, for every logger in the process.
    public static var minimumLevel: Level {
        get { LogSink.shared.minimumLevel.withLock { $0 } }
        set { LogSink.shared.minimumLevel.withLock { $0 = newValue } }
    }

    public func log(_ level: Level, _ message: String, _ metadata: [String: JSONValue] = [:]) {
        LogSink.shared.write(level: level, label: label, message: message, metadata: metadata)
    }
    public func trace(_ message: String, _ metadata: [String: JSONValue] = [:]) { log(.trace, message, metadata) }
    public func debug(_ message: String, _ metadata: [String: JSONValue] = [:]) { log(.debug, message, metadata) }
    public func info(_ message: String, _ metadata: [String: JSONValue] = [:]) { log(.info, message, metadata) }
    public func notice(_ message: String, _ metadata: [String: JSONValue] = [:]) { log(.notice, message, metadata) }
    public func warning(_ message: String, _ metadata: [String: JSONValue] = [:]) { log(.warning, message, metadata) }
    public func error(_ message: String, _ metadata: [String: JSONValue] = [:]) { log(.error, message, metadata) }
    public func critical(_ message: String, _ metadata: [String: JSONValue] = [:]) { log(.critical, message, metadata) }

    /// Writes a line exactly as given (no JSON wrapping): for lines whose exact text users grep
    /// for, such as Core Data's fault lines. Still one line on stderr.
    public func rawLine(_ line: String) {
        LogSink.shared.writeLine(line)
    }
}

/// The process-wide writer behind every Logger: one lock so lines never interleave.
final class LogSink: Sendable {
    static let shared = LogSink()
    let minimumLevel = Mutex(Logger.Level.info)
    private let lock = Mutex(())

    func write(level: Logger.Level, label: String, message: String, metadata: [String: JSONValue]) {
        guard level >= minimumLevel.withLock({ $0 }) else { return }
        var entry = metadata
        entry["ts"] = .string(LogTimestamp.now())
        entry["level"] = .string(level.name)
        entry["label"] = .string(label)
        entry["msg"] = .string(message)
        guard let text = LogLineText.text(entry) else { return }
        writeLine(text)
    }

    func writeLine(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Glibc.write(2, raw.baseAddress! + offset, raw.count - offset)
                    if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { break }
                }
            }
        }
    }
}

/// The time of a log line as ISO 8601 in UTC with milliseconds (`2026-12-06T12:56:50.995Z`),
/// the text `Date.ISO8601FormatStyle(includingFractionalSeconds: true)` writes. Made from the
/// clock and gmtime_r: the format style's first use loads ICU's time-zone data, 1.4 ms of a
/// service's start-up before its first line.
public enum LogTimestamp {
    public static func now() -> String {
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        return text(seconds: clock.tv_sec, milliseconds: Int(clock.tv_nsec / 1_000_000))
    }

    static func text(seconds: time_t, milliseconds: Int) -> String {
        var seconds = seconds
        var fields = tm()
        gmtime_r(&seconds, &fields)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func append(_ value: Int, digits: Int) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        append(Int(fields.tm_year) + 1900, digits: 4)
        bytes.append(UInt8(ascii: "-"))
        append(Int(fields.tm_mon) + 1, digits: 2)
        bytes.append(UInt8(ascii: "-"))
        append(Int(fields.tm_mday), digits: 2)
        bytes.append(UInt8(ascii: "T"))
        append(Int(fields.tm_hour), digits: 2)
        bytes.append(UInt8(ascii: ":"))
        append(Int(fields.tm_min), digits: 2)
        bytes.append(UInt8(ascii: ":"))
        append(Int(fields.tm_sec), digits: 2)
        bytes.append(UInt8(ascii: "."))
        append(milliseconds, digits: 3)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }
}
