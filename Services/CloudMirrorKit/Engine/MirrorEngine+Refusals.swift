import CloudWire
import MeowWire
import StoreServiceKit
import StoreWire

typealias RefusedExport = SyncStatus.RefusedExport

extension SyncStatus.RefusedExport {
    /// The refusal as `sync.status` lists it: the server's error, and what its details name.
    init(recordName: String, entity: String, store: String, error: WireError) {
        self.init(recordName: recordName, entity: entity, store: store, code: error.code.rawValue, message: error.message,
                  recordType: error.details["recordType"]?.stringValue, field: error.details["field"]?.stringValue,
                  environment: error.details["environment"]?.stringValue)
    }
}

extension MirrorEngine {
    /// The records of `scope`'s store the server refused, sorted by name.
    func refusedExports(store: String) -> [RefusedExport] {
        progress.withLock { $0.refusedExports.values.filter { $0.store == store } }.sorted { $0.recordName < $1.recordName }
    }

    /// The export event's error when records of `scope`'s store were refused and the rest went on.
    func refusedExportsError(scope: StoreScope) -> WireError {
        let name = storeIdentities.first { $0.scope == scope }?.name ?? scope.rawValue
        let refused = refusedExports(store: name)
        let first = refused.first.map { " First: \($0.recordName): \($0.message)" } ?? ""
        return WireError(.partialFailure, "\(refused.count) record(s) of the \(name) store were refused by the server and stay queued; the rest were exported.\(first)",
                         details: ["refused": .array(refused.map { .string($0.recordName) })])
    }
}
