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
    /// Frames are kept as their values and written as text only when the trace is read (most
    /// traces never are: a passing test's, an explorer's run); past this many values' nodes
    /// held, the oldest held ones are written out, so a trace holds about what its texts would.
    static let maxHeldNodes = 1_000_000
    private let start = ContinuousClock.now
    /// When the trace started, in seconds since 1970: puts frames on the request log's clock.
    public let startedAt = Date().timeIntervalSince1970
    private let entries = Mutex(Entries())
    /// Credentials the cluster made or its clients used: a failure report never shows them,
    /// wherever they appear (a frame, a message, a log line).
    private let secrets = Mutex<Set<String>>([])

    /// A frame as kept: its text, or its value to write as text when read.
    private struct Stored {
        var time: Double
        var connection: String
        var direction: String
        var frame: Frame

        var entry: Entry { Entry(time: time, connection: connection, direction: direction, json: frame.text) }
    }

    private enum Frame {
        case text(String)
        case value(JSONValue, redacting: Bool, nodes: Int)

        var text: String {
            switch self {
            case let .text(text): return text
            case let .value(value, redacting, _): return TraceText.text(value, redacting: redacting)
            }
        }

        var nodes: Int {
            if case let .value(_, _, nodes) = self { return nodes }
            return 0
        }
    }

    private struct Entries {
        var items: [Stored] = []
        var heldNodes = 0
        /// No entry before this one holds a value.
        var firstHeld = 0
    }

    public init() {}

    func record(_ connection: String, _ direction: String, _ json: @autoclosure () -> String) {
        var text = json()
        // Counting characters walks the whole text: only a text of more bytes than the cut can be over it.
        if text.utf8.count > Self.maxEntryCharacters, text.count > Self.maxEntryCharacters {
            text = String(text.prefix(Self.maxEntryCharacters)) + "…"
        }
        append(Stored(time: elapsed, connection: connection, direction: direction, frame: .text(text)))
    }

    /// Records a frame's value, written as `TraceText.text(value, redacting:)` when the trace is read.
    func record(_ connection: String, _ direction: String, value: JSONValue, redacting: Bool) {
        let time = elapsed
        let nodes = Self.nodes(in: value, upTo: Self.maxHeldNodes / 100)
        // A value this large is written now: holding it would hold much more than its cut text.
        let frame: Frame = nodes > Self.maxHeldNodes / 100 ? .text(TraceText.text(value, redacting: redacting)) : .value(value, redacting: redacting, nodes: nodes)
        append(Stored(time: time, connection: connection, direction: direction, frame: frame))
    }

    private var elapsed: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private func append(_ stored: Stored) {
        entries.withLock { entries in
            entries.items.append(stored)
            entries.heldNodes += stored.frame.nodes
            // Trimmed a tenth at a time: trimming one entry per frame would move the whole array each frame.
            if entries.items.count > Self.maxEntries + Self.maxEntries / 10 {
                let dropped = entries.items.count - Self.maxEntries
                entries.heldNodes -= entries.items[..<dropped].reduce(0) { $0 + $1.frame.nodes }
                entries.items.removeFirst(dropped)
                entries.firstHeld = max(0, entries.firstHeld - dropped)
            }
            while entries.heldNodes > Self.maxHeldNodes, entries.firstHeld < entries.items.count {
                let index = entries.firstHeld
                entries.heldNodes -= entries.items[index].frame.nodes
                if case .value = entries.items[index].frame { entries.items[index].frame = .text(entries.items[index].frame.text) }
                entries.firstHeld += 1
            }
        }
    }

    /// The nodes of `value`, counted up to just past `limit`.
    private static func nodes(in value: JSONValue, upTo limit: Int) -> Int {
        var count = 0
        func walk(_ value: JSONValue) {
            guard count <= limit else { return }
            count += 1
            switch value {
            case let .array(elements): elements.forEach(walk)
            case let .object(members): members.values.forEach(walk)
            default: break
            }
        }
        walk(value)
        return count
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
    public var all: [Entry] { entries.withLock { Array($0.items.suffix(Self.maxEntries)) }.map(\.entry) }

    /// One line per frame: `  1.234 A → {"op":"sync.now","params":{}}`.
    public func text() -> String {
        redacting(all.map { String(format: "%8.3f ", $0.time) + "\($0.connection) \($0.direction) \($0.json)" }.joined(separator: "\n"))
    }
}
