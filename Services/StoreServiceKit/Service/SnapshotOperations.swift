import FoundationEssentials
import MeowWire
import ServiceRuntime

/// snapshot.export / snapshot.import: both stores at once, inline or through a file the
/// service writes or reads (a snapshot in a file has no frame limit).
struct SnapshotExportParams: Codable, Sendable {
    var path: String?
}

struct SnapshotImportParams: Codable, Sendable {
    var snapshot: DeviceSnapshot?
    var path: String?
}

struct SnapshotExportResult: Codable, Sendable {
    var snapshot: DeviceSnapshot?
    var path: String?
    var bytes: Int?
    /// Rows per store, then per table.
    var stores: [String: [String: Int]]?
}

struct SnapshotImportResult: Codable, Sendable {
    /// Rows written per store.
    var stores: [String: Int]
}

extension StoreService {
    func registerSnapshotOperations(in registry: inout OperationRegistry) {
        registry.register("snapshot.export", params: SnapshotExportParams.self,
                          summary: "Both stores as one JSON snapshot (or written to params.path).") { [self] params, request in
            let progress = ProgressReporter(request)
            guard let path = params.path else {
                return SnapshotExportResult(snapshot: try whileNoSyncRuns { try engine().coordinator.withStores { try DeviceSnapshot.export($0, progress: progress) } })
            }
            let files = files(request)
            let (rows, bytes) = try whileNoSyncRuns { try engine().coordinator.withStores { stores in
                try files.writing(to: path) { output in try DeviceSnapshot.write(stores, to: output, progress: progress) }
            } }
            progress.report(phase: "writing", done: 0, total: bytes)
            progress.report(phase: "writing", done: bytes, total: bytes)
            return SnapshotExportResult(path: path, bytes: bytes, stores: rows)
        }
        registry.register("snapshot.import", params: SnapshotImportParams.self,
                          summary: "Replaces both stores' contents with a snapshot (inline or from params.path).") { [self] params, request in
            let progress = ProgressReporter(request)
            // A mirroring device's share permissions are the cloud's, not the snapshot's.
            let cloud = companion?.mirrors == true ? companion : nil
            let written: [String: Int]
            switch (params.snapshot, params.path) {
            case let (given?, nil):
                written = try whileNoSyncRuns { try engine().coordinator.withStores { try given.importInto($0, cloud: cloud, progress: progress) } }
            case let (nil, path?):
                let files = files(request)
                written = try whileNoSyncRuns { try engine().coordinator.withStores { stores in
                    try files.reading(path) { source, size in try Self.importFile(path, source: source, size: size, into: stores, cloud: cloud, progress: progress) }
                } }
            default:
                throw ServiceError(.invalidField, "snapshot.import takes params.snapshot (the snapshot itself) or params.path (a file holding it), exactly one.",
                                   details: ["field": "params"])
            }
            return SnapshotImportResult(stores: written)
        }
    }

    /// A snapshot is taken and put back between sync steps, never in the middle of one.
    private func whileNoSyncRuns<T>(_ body: () throws -> T) throws -> T {
        guard let companion else { return try body() }
        return try companion.pausing(body)
    }

    /// The file rules for this request's peer (`WholeFile`).
    private func files(_ request: RequestContext) -> WholeFile {
        configuration.files(for: request.connection.peer, service: "store-service", code: .invalidField)
    }

    /// Streams a snapshot file into the stores (`DeviceSnapshotFile`); progress counts the file's bytes.
    private static func importFile(_ path: String, source: @escaping JSONStream.Source, size: Int, into stores: StoreSet,
                                   cloud: (any StoreCompanion)?, progress: ProgressReporter) throws -> [String: Int] {
        progress.report(phase: "writing", done: 0, total: size)
        let writer = try DeviceSnapshotWriter(stores, cloud: cloud)
        do {
            var file = DeviceSnapshotFile(JSONStream(source: source), into: writer) { done in
                if done < size { progress.report(phase: "writing", done: done, total: size) }
            }
            do { try file.read() } catch let failure as JSONParser.Failure {
                throw ServiceError(.invalidField, "\(path) is not a device snapshot (\(size) bytes; expected the JSON snapshot.export writes: \(failure)). Nothing was imported.",
                                   details: ["field": "params.path", "path": .string(path)])
            }
            progress.report(phase: "writing", done: size, total: size)
            return try writer.commit()
        } catch {
            writer.rollback()
            throw error
        }
    }
}
