import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import StoreServiceKit
import StoreWire

/// `sync.initializeSchema`.
extension MirrorEngine {
    /// NSPersistentCloudKitContainer.initializeCloudKitSchema(options:): one representative
    /// record per mirrored entity, every field set, is saved to the private database's Core
    /// Data zone and deleted again. The cloud's just-in-time schema (the development
    /// environment's) learns every field's type before any real record is sent, and a field
    /// whose type the schema already gives otherwise (an app version that changed an
    /// attribute's type) fails here, with CloudKit's message, instead of at the first export.
    /// The records carry the types the mirror's exports give each attribute
    /// (`MirrorRecordCoding.fieldType`: booleans as int64, dates as date, …). Another
    /// device fetching meanwhile may see them come and go, as with Apple's.
    func initializeSchema(dryRun: Bool, progress: ProgressReporter = .silent) throws -> SchemaInitialization {
        let (saves, recordTypes) = mapping.schemaRecords()
        guard !dryRun else { return SchemaInitialization(recordTypes: recordTypes, uploaded: 0, dryRun: true) }
        try signedInCredential()
        // Made (or found) every time: a zone deleted since this process made it is made again.
        _ = try request("zones.save", ZonesParams(database: .private, zoneIDs: [.coreData]))
        progress.report(phase: "uploading", done: 0, total: saves.count)
        switch attempt("records.modify", ModifyParams(database: .private, saves: saves, savePolicy: .allKeys, atomic: true, reply: .tags)) {
        case .success: break
        case let .failure(error):
            // The item at fault says what the schema refused.
            guard let item = Self.itemAtFault(error) else { throw error }
            // Production learns nothing from saves: its server refuses the representative
            // records as it refuses any record of an undeployed type or field.
            let hint = options.environment == .production
                ? " initializeCloudKitSchema defines a schema only in the development environment; run it against development and deploy the schema to production (meowctl schema deploy)."
                : ""
            throw WireError(item.code, "sync.initializeSchema: \(item.message)\(hint)", details: item.details)
        }
        progress.report(phase: "uploading", done: saves.count, total: saves.count)
        let deletes = saves.map { DeleteItem(recordName: $0.recordName, zoneID: $0.zoneID) }
        do {
            _ = try request("records.modify", ModifyParams(database: .private, deletes: deletes, atomic: true))
            progress.report(phase: "deleting", done: deletes.count, total: deletes.count)
        } catch {
            throw WireError(error.code, "sync.initializeSchema: the schema is defined, but deleting its representative records failed (\(error.message)); run it again to delete them.",
                            details: error.details)
        }
        return SchemaInitialization(recordTypes: recordTypes, uploaded: saves.count, dryRun: false)
    }
}
