import Foundation
import CloudWire
import MeowWire
import ServiceRuntime

/// admin.importSnapshot through a file the service reads (admin.exportSnapshot writes one with
/// `CloudEngine.writeSnapshot`): a snapshot inline must fit in one frame (16 MiB by default), one
/// in a file has no such limit.
enum SnapshotFile {
    /// Imports the snapshot in `path` (absolute), as `admin.exportSnapshot` writes it, streamed:
    /// rows go into the cloud as they are read (`CloudSnapshotFile`); progress counts the file's bytes.
    static func importFile(_ path: String, into engine: CloudEngine, files: WholeFile, progress: ProgressReporter) throws -> ImportResult {
        try files.reading(path) { source, size in
            progress.report(phase: "writing", done: 0, total: size)
            do {
                return try engine.importSnapshot { rows in
                    var file = CloudSnapshotFile(JSONStream(source: source), into: rows) { done in
                        if done < size { progress.report(phase: "writing", done: done, total: size) }
                    }
                    try file.read()
                    progress.report(phase: "writing", done: size, total: size)
                }
            } catch let failure as JSONParser.Failure {
                throw WireError(.invalidArguments, "\(path) is not a snapshot (\(size) bytes; expected the JSON admin.exportSnapshot writes: \(failure)). Nothing was imported.",
                                details: ["path": .string(path)])
            }
        }
    }
}

/// A cloud snapshot file read with a `JSONStream` into `CloudSnapshotRows`, a row at a time. The
/// header (format, schemaVersion) is checked before any row: the export writes it first, and a
/// file with its tables first is read in two passes (the tables skipped, then read again).
struct CloudSnapshotFile {
    typealias Failure = JSONParser.Failure

    private var stream: JSONStream
    private let rows: CloudSnapshotRows
    /// Called every 1,000 rows with how far into the file the reading is.
    private let reached: (Int) -> Void

    init(_ stream: JSONStream, into rows: CloudSnapshotRows, reached: @escaping (Int) -> Void) {
        self.stream = stream
        self.rows = rows
        self.reached = reached
    }

    mutating func read() throws {
        try stream.beginObject()
        var format: String?, schemaVersion: Int?
        var tablesAt: Int?
        var tablesRead = false
        var keys: Set<String> = []
        while let key = try stream.nextKey() {
            guard keys.insert(key).inserted else { throw failure("member '\(key)' appears twice") }
            switch key {
            case "format":
                guard case let .string(text) = try stream.value() else { throw failure("format must be a string") }
                format = text
            case "schemaVersion":
                guard case let .int(number) = try stream.value() else { throw failure("schemaVersion must be an integer") }
                schemaVersion = number
            case "tables":
                if let format, let schemaVersion {
                    try rows.header(format: format, schemaVersion: schemaVersion)
                    try readTables()
                    tablesRead = true
                } else {
                    tablesAt = stream.position
                    try stream.skipValue()
                }
            default: try stream.skipValue()
            }
        }
        guard let format, let schemaVersion, tablesRead || tablesAt != nil else { throw failure("the snapshot needs format, schemaVersion and tables") }
        if let tablesAt {
            try rows.header(format: format, schemaVersion: schemaVersion)
            let resume = stream.position
            stream.seek(to: tablesAt)
            try readTables()
            stream.seek(to: resume)
        }
        guard try stream.atEnd else { throw failure("unexpected data after the JSON value") }
    }

    private mutating func readTables() throws {
        try stream.beginObject()
        while let name = try stream.nextKey() {
            guard try rows.beginTable(name) else {
                try stream.skipValue()
                continue
            }
            try stream.beginArray()
            while try stream.nextElement() {
                guard case let .array(row) = try stream.value() else { throw failure("a row must be an array of column values") }
                try rows.row(row)
                if rows.rowsWritten % 1000 == 0 { reached(stream.position) }
            }
        }
    }

    private func failure(_ reason: String) -> Failure { stream.failure(reason) }
}

/// admin.exportSnapshot's answer: the snapshot itself, or where it was written.
public struct SnapshotExport: Encodable, Sendable {
    public var snapshot: CloudSnapshot?
    public var path: String?
    public var bytes: Int?
    public var tables: [String: Int]?
}
