import CloudWire
import MeowWire
import StoreServiceKit
import StoreWire

/// A record the server refused with an error of its own at its last send, as `sync.status`
/// lists it: it stays queued and is sent again with the next send.
struct RefusedExport: Codable, Sendable, Hashable {
    var recordName: String
    var entity: String
    var store: String
    var code: String
    var message: String
    /// From the server's error: the record type and field it names, and the environment of a
    /// production schema refusal.
    var recordType: String?
    var field: String?
    var environment: String?

    init(recordName: String, entity: String, store: String, error: WireError) {
        self.recordName = recordName
        self.entity = entity
        self.store = store
        code = error.code.rawValue
        message = error.message
        recordType = error.details["recordType"]?.stringValue
        field = error.details["field"]?.stringValue
        environment = error.details["environment"]?.stringValue
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
