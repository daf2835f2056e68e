#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import MeowWire
import Synchronization

/// One request as the operator sees it: who, where, what, the answer, and every permission
/// decision with its reason.
public struct RequestLogEntry: Codable, Sendable {
    public var seq: Int
    public var time: Double
    public var connection: Int
    /// The name the connection gave in `hello` (a mirror names its device:
    /// "store-service mirror (A)").
    public var client: String?
    public var user: String?
    public var op: String
    public var database: String?
    public var zones: [String]
    public var code: String
    public var permissions: [JSONValue]
    /// Decisions left out of the in-memory copy (see `RequestLog.retainedDecisions`); the
    /// `--request-log` file has them all.
    public var permissionsOmitted: Int?
    /// Shares the request created, changed or ended: `change` (created, changed, stopped,
    /// left), `recordName` (the share's) and `zone`. Absent when none.
    public var shares: [JSONValue]?
    /// Records the request saved or deleted: `action` (saved, deleted), `recordName`,
    /// `recordType`, `zone` and, for a save, `changed` (the fields whose value it changed).
    /// Absent when none.
    public var writes: [JSONValue]?
    /// Writes left out of the in-memory copy (the `--request-log` file has them all).
    public var writesOmitted: Int?
    /// How long the request ran, from its start to its answer (`time` is when it finished).
    public var milliseconds: Double?
}

public struct RequestLogParams: Codable, Sendable {
    /// Only entries after this sequence number.
    public var after: Int?
    public var limit: Int?
    /// Which forms the reply carries (both when absent).
    public var form: RequestLogForm?
}

/// The forms `admin.requestLog` answers in: a reader that needs one need not pay for writing
/// every entry twice.
public enum RequestLogForm: String, Codable, Sendable {
    case entries, jsonLines, both
}

public struct RequestLogResult: Codable, Sendable {
    /// The entries as objects (absent when only `jsonLines` was asked for).
    public var entries: [RequestLogEntry]?
    /// The same entries as JSON lines (absent when only `entries` was asked for).
    public var jsonLines: String?
}

/// The last `capacity` requests in memory, and every request appended to a file as a JSON line
/// when `--request-log FILE` is given.
public final class RequestLog: Sendable {
    private struct State {
        var entries: [RequestLogEntry] = []
        var next = 1
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let file: Mutex<UnsafeMutablePointer<FILE>?>

    public init(capacity: Int = 10_000, path: String? = nil) throws {
        self.capacity = capacity
        var handle: UnsafeMutablePointer<FILE>?
        if let path {
            // 0600: the log names users, zones and permission decisions.
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            if fd >= 0 { _ = fchmod(fd, 0o600) }
            handle = fd >= 0 ? fdopen(fd, "a") : nil
            if handle == nil {
                let reason = String(cString: strerror(errno))
                if fd >= 0 { close(fd) }
                throw WireError(.internalError, "Cannot open the request log \(path): \(reason).")
            }
        }
        file = Mutex(handle)
    }

    deinit {
        file.withLock { if let handle = $0 { fclose(handle) } }
    }

    /// Per entry in memory: the first 20 decisions, and denied ones up to 100. A 400-record
    /// batch makes 400 decisions; kept whole, 10,000 such entries held gigabytes.
    static let retainedDecisions = 20
    static let retainedDeniedDecisions = 100

    /// How many writes (and decisions before only denied ones) a request's trace need keep:
    /// all when a file has them, else the ones the in-memory copy retains.
    var writesKept: Int? { file.withLock { $0 == nil } ? Self.retainedDecisions : nil }

    func record(connection: Int, client: String? = nil, user: String?, op: String, trace: RequestTrace, code: String, time: Double,
                milliseconds: Double? = nil) {
        let entry = state.withLock { state -> RequestLogEntry in
            var entry = RequestLogEntry(seq: state.next, time: time, connection: connection, client: client, user: user, op: op,
                                        database: trace.database, zones: trace.zones, code: code, permissions: trace.decisions,
                                        shares: trace.shares.isEmpty ? nil : trace.shares,
                                        writes: trace.writes.isEmpty ? nil : trace.writes,
                                        writesOmitted: trace.writesOmitted == 0 ? nil : trace.writesOmitted, milliseconds: milliseconds)
            entry.permissionsOmitted = trace.decisionsOmitted == 0 ? nil : trace.decisionsOmitted
            state.next += 1
            state.entries.append(Self.retained(entry))
            // Trimmed in steps of a tenth, so a full log does not shift every entry per request.
            if state.entries.count > capacity + capacity / 10 { state.entries.removeFirst(state.entries.count - capacity) }
            return entry
        }
        file.withLock { handle in
            guard let handle, let line = Self.line(entry) else { return }
            fputs(line + "\n", handle)
            fflush(handle)
        }
    }

    /// The in-memory copy of an entry: decisions capped, the rest counted.
    static func retained(_ entry: RequestLogEntry) -> RequestLogEntry {
        var entry = entry
        if let writes = entry.writes, writes.count > retainedDecisions {
            entry.writes = Array(writes.prefix(retainedDecisions))
            entry.writesOmitted = (entry.writesOmitted ?? 0) + writes.count - retainedDecisions
        }
        guard entry.permissions.count > retainedDecisions else { return entry }
        var kept = Array(entry.permissions.prefix(retainedDecisions))
        for decision in entry.permissions.dropFirst(retainedDecisions) where decision["decision"] == "denied" {
            guard kept.count < retainedDeniedDecisions else { break }
            kept.append(decision)
        }
        var copy = entry
        copy.permissionsOmitted = (entry.permissionsOmitted ?? 0) + entry.permissions.count - kept.count
        copy.permissions = kept
        return copy
    }

    public func entries(after: Int?, limit: Int?, form: RequestLogForm = .both) -> RequestLogResult {
        let selected = state.withLock { state in
            // The last `capacity` entries (the array may hold up to a tenth more before a trim).
            Array(state.entries.suffix(capacity).filter { $0.seq > (after ?? 0) }.prefix(max(1, limit ?? 1000)))
        }
        return RequestLogResult(entries: form == .jsonLines ? nil : selected,
                                jsonLines: form == .entries ? nil : selected.compactMap(Self.line).joined(separator: "\n"))
    }

    static func line(_ entry: RequestLogEntry) -> String? {
        try? JSONTextEncoder(options: .sortedKeys).text(entry)
    }
}
