import Foundation
import CloudWire
import MeowWire
import ServiceRuntime

/// admin.exportSnapshot and admin.importSnapshot through a file the service writes or reads: a
/// snapshot inline must fit in one frame (16 MiB by default), one in a file has no such limit.
enum SnapshotFile {
    /// Writes `snapshot` to `path` (absolute; created 0600 and replaced whole, as `WholeFile` allows).
    static func write(_ snapshot: CloudSnapshot, to path: String, files: WholeFile) throws -> Int {
        let data: Data
        do { data = try JSONEncoder().encode(snapshot) } catch {
            throw WireError(.internalError, "Cannot encode the snapshot: \(error).")
        }
        try files.write(data, to: path)
        return data.count
    }

    /// The snapshot in `path` (absolute), as `admin.exportSnapshot` writes it.
    static func read(_ path: String, files: WholeFile) throws -> CloudSnapshot {
        let data = try files.read(path)
        do { return try JSONDecoder().decode(CloudSnapshot.self, from: data) } catch {
            throw WireError(.invalidArguments, "\(path) is not a snapshot (\(data.count) bytes; expected the JSON admin.exportSnapshot writes).")
        }
    }
}

/// admin.exportSnapshot's answer: the snapshot itself, or where it was written.
public struct SnapshotExport: Encodable, Sendable {
    public var snapshot: CloudSnapshot?
    public var path: String?
    public var bytes: Int?
    public var tables: [String: Int]?
}
