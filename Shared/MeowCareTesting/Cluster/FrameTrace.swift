import Foundation
import Synchronization

/// What the cluster's clients sent and received, in order: every request, reply and event on
/// every connection the fixture opened, each with its time since the cluster started. A failing
/// test attaches it, as `meowctl tap` would have recorded the same connections.
///
/// ```swift
/// print(cluster.trace.text())
/// ```
public final class FrameTrace: Sendable {
    public struct Entry: Sendable {
        /// Seconds since the cluster started.
        public var time: Double
        /// The connection, e.g. `A` or `cloud:admin`.
        public var connection: String
        /// `→` sent, `←` received (a reply), `⚡` an event.
        public var direction: String
        /// The frame's JSON, cut to `maxEntryCharacters`.
        public var json: String
    }

    /// Entries beyond this are dropped from the front: the end of a trace explains a failure.
    public static let maxEntries = 20_000
    public static let maxEntryCharacters = 4_000
    static let minimumSecretLength = 6
    private let start = ContinuousClock.now
    /// When the trace started, in seconds since 1970: puts frames on the request log's clock.
    public let startedAt = Date().timeIntervalSince1970
    private let entries = Mutex<[Entry]>([])
    /// Credentials the cluster made or its clients used: a failure report never shows them,
    /// wherever they appear (a frame, a message, a log line).
    private let secrets = Mutex<Set<String>>([])

    public init() {}

    func record(_ connection: String, _ direction: String, _ json: @autoclosure () -> String) {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var text = json()
        // Counting characters walks the whole text: only a text of more bytes than the cut can be over it.
        if text.utf8.count > Self.maxEntryCharacters, text.count > Self.maxEntryCharacters {
            text = String(text.prefix(Self.maxEntryCharacters)) + "…"
        }
        let entry = Entry(time: seconds, connection: connection, direction: direction, json: text)
        entries.withLock { entries in
            entries.append(entry)
            // Trimmed a tenth at a time: trimming one entry per frame would move the whole array each frame.
            if entries.count > Self.maxEntries + Self.maxEntries / 10 { entries.removeFirst(entries.count - Self.maxEntries) }
        }
    }

    /// Notes a credential, so `redacting(_:)` hides it. A very short one (a test's deliberately
    /// wrong "x") is left alone: hiding every occurrence of it would garble the report.
    func keepSecret(_ secret: String?) {
        guard let secret, secret.count >= Self.minimumSecretLength else { return }
        secrets.withLock { _ = $0.insert(secret) }
    }

    /// `text` with every credential noted so far replaced by `<redacted>`.
    public func redacting(_ text: String) -> String {
        let known = secrets.withLock { $0 }.sorted { $0.count > $1.count }
        return known.reduce(text) { $0.replacingOccurrences(of: $1, with: "<redacted>") }
    }

    /// Every entry so far (the last `maxEntries`).
    public var all: [Entry] { entries.withLock { Array($0.suffix(Self.maxEntries)) } }

    /// One line per frame: `  1.234 A → {"op":"sync.now","params":{}}`.
    public func text() -> String {
        redacting(all.map { String(format: "%8.3f ", $0.time) + "\($0.connection) \($0.direction) \($0.json)" }.joined(separator: "\n"))
    }
}
