import Foundation
import MeowWire

/// What a report is made of, as the processes wrote it: the sync-service's request log, the
/// frame trace of the test clients, each service's log, and an explored run's history with the
/// checks that failed. Every part may be empty; the page shows what there is.
public struct ReportSources: Sendable {
    /// One service's log: its name (a lane: `cloud`, a device's name, `supervisor`) and its lines.
    public struct ServiceLog: Sendable {
        public var service: String
        public var lines: [JSONValue]
        public init(service: String, lines: [JSONValue]) {
            self.service = service
            self.lines = lines
        }
    }

    public var title: String
    /// Request log entries (`admin.requestLog`, `--request-log FILE`), one object each.
    public var requests: [JSONValue] = []
    /// Frames as `{time, connection, direction, json}`; `time` in seconds since `framesStart`.
    public var frames: [JSONValue] = []
    /// When the frame trace started (seconds since 1970), if known: it puts frames on the
    /// request log's clock. Unknown: the first frame is put at the first request.
    public var framesStart: Double?
    public var logs: [ServiceLog] = []
    /// An explored run's `HistoryEntry` lines.
    public var history: [JSONValue] = []
    /// Failed checks: `{check, explanation, entries?: [history index], requests?: [seq],
    /// records?: [recordName]}`; a page highlights what each names.
    public var failures: [JSONValue] = []
    /// Each device's user, when the caller knows it (a request log names only the cloud's side).
    public var deviceUsers: [String: String] = [:]

    public init(title: String) { self.title = title }

    /// JSON lines as objects; a line that is not a JSON object (a raw fault line, a truncated
    /// last line) is kept as `{"msg": line}` so nothing a service wrote is hidden.
    public static func jsonLines(_ text: String) -> [JSONValue] {
        text.split(whereSeparator: \.isNewline).compactMap { line -> JSONValue? in
            let trimmed = line.drop(while: \.isWhitespace)
            guard !trimmed.isEmpty else { return nil }
            if let value = try? JSONParser.parse(String(trimmed)), value.objectValue != nil { return value }
            return .object(["msg": .string(String(trimmed))])
        }
    }

    /// `FrameTrace.text()`'s lines (`  1.234 A → {…}`) as frame objects.
    public static func frameLines(_ text: String) -> [JSONValue] {
        text.split(whereSeparator: \.isNewline).compactMap { line -> JSONValue? in
            let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
            guard parts.count == 4, let time = Double(parts[0]) else { return nil }
            return .object(["time": .double(time), "connection": .string(String(parts[1])),
                            "direction": .string(String(parts[2])), "json": .string(String(parts[3]))])
        }
    }

    /// Failed checks from a file: one JSON array, or one object per line (`CheckFailure`s).
    public static func failures(_ text: String) -> [JSONValue] {
        if let parsed = try? JSONParser.parse(text), let array = parsed.arrayValue { return array }
        return jsonLines(text)
    }

    /// Whether a JSON line is a request log entry rather than a service's log line.
    static func isRequestEntry(_ value: JSONValue) -> Bool {
        value["seq"]?.intValue != nil && value["op"]?.stringValue != nil && value["code"] != nil
    }

    /// What a directory holds: a deployment's (`logs/requests.jsonl`, `logs/NAME.log`), a test
    /// cluster's (`cloud.log`, `device-N.log`), a failed test's saved artifacts
    /// (`cloud-requests.jsonl`, `frames.txt`, `NAME.log`). JSON lines files that hold request
    /// log entries are the request log; a `.log` file is a service's log, its lane the device a
    /// mirror names in its log (`connected to the sync-service`) or else the file's name.
    public static func load(directory: String, title: String? = nil) throws -> ReportSources {
        var sources = ReportSources(title: title ?? directory)
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ReportError("\(directory) is not a directory.")
        }
        let folders = [directory, "\(directory)/logs"].filter { manager.fileExists(atPath: $0) }
        for folder in folders {
            for name in ((try? manager.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
                let path = "\(folder)/\(name)"
                if name == "frames.txt" {
                    let text = try read(path)
                    // A trace that says when it started (`# started EPOCH`, the Python client's) is put on the cloud's clock.
                    if text.hasPrefix("# started "), let start = Double(text.dropFirst(10).prefix { !$0.isNewline }) { sources.framesStart = start }
                    sources.frames += frameLines(text)
                } else if name.hasSuffix(".jsonl") {
                    let lines = jsonLines(try read(path))
                    if lines.contains(where: isRequestEntry) { sources.requests += lines.filter(isRequestEntry) }
                } else if name.hasSuffix(".log") {
                    sources.add(log: jsonLines(try read(path)), file: String(name.dropLast(4)))
                }
            }
        }
        sources.requests.sort { ($0["seq"]?.intValue ?? 0) < ($1["seq"]?.intValue ?? 0) }
        return sources
    }

    /// Adds a service's log; a device's log names its device and user.
    public mutating func add(log lines: [JSONValue], file: String) {
        let named = lines.first { $0["msg"]?.stringValue == "connected to the sync-service" && $0["device"]?.stringValue != nil }
        let service = named?["device"]?.stringValue ?? file
        if let user = named?["user"]?.stringValue { deviceUsers[service] = user }
        logs.append(ServiceLog(service: service, lines: lines))
    }

    static func read(_ path: String) throws -> String {
        do { return try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ReportError("Cannot read \(path): \(error.localizedDescription)")
        }
    }
}

/// A report that cannot be made, with what to do about it.
public struct ReportError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
