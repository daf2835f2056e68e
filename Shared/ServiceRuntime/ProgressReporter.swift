import FoundationEssentials
import MeowWire
import Synchronization

/// How far a long request has come (a share over thousands of objects, a snapshot, the schema's
/// initialisation), as `progress` events to the connection that made it, if it subscribed to
/// the `progress` topic: the caller can show it; nobody else learns of another's request.
///
/// ```swift
/// let progress = ProgressReporter(context)
/// for (index, object) in objects.enumerated() { progress.report(phase: "moving", done: index + 1, total: objects.count) }
/// ```
public final class ProgressReporter: Sendable {
    public static let topic = "progress"
    public static let event = "progress"
    /// Between two events of one phase at least this long passes (the first and last always go).
    static let interval: Duration = .milliseconds(100)

    private let connection: ConnectionHandle?
    private let requestID: RequestID?
    private let op: String
    private let last = Mutex<(phase: String, at: ContinuousClock.Instant)?>(nil)

    public init(_ context: RequestContext) {
        connection = context.connection
        requestID = context.requestID
        op = context.op
    }

    private init() {
        connection = nil
        requestID = nil
        op = ""
    }

    /// Reports nothing: for work no request waits on (the automatic mode, start-up).
    public static let silent = ProgressReporter()

    struct Notice: Encodable {
        var requestID: RequestID?
        var op: String
        var phase: String
        var done: Int
        var total: Int?
    }

    /// `done` of `total` units of `phase` are finished. Events of one phase are spaced out;
    /// a new phase and `done == total` always go out.
    public func report(phase: String, done: Int, total: Int?) {
        guard let connection, connection.isSubscribed(to: Self.topic) else { return }
        let now = ContinuousClock.now
        let due = last.withLock { last -> Bool in
            let finished = total == done
            guard finished || last?.phase != phase || last.map({ now - $0.at >= Self.interval }) ?? true else { return false }
            last = (phase, now)
            return true
        }
        guard due else { return }
        guard let data = try? JSONTextEncoder(options: .sortedKeys).bytes(Notice(requestID: requestID, op: op, phase: phase, done: done, total: total)) else { return }
        connection.push(event: Self.event, dataJSON: data)
        // A phase's last event is on the wire before the request's reply, which the caller can
        // then take as the end of its progress.
        if total == done { connection.flushEvents() }
    }
}
