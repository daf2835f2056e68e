import CloudWire
import Foundation
import MeowWire
import StoreWire

/// `meowctl doctor`'s checks, run against one device's store-service and, optionally, the cloud as
/// the device's user: the invariants MeowCare's bugs broke, each violation explained.
///
/// ```swift
/// var doctor = Doctor(device: WireInspectionConnection(client: device))
/// try await doctor.examineDevice()
/// print(doctor.findings.map(\.summary))
/// ```
public struct Doctor: Sendable {
    let device: any InspectionConnection
    public private(set) var findings: [Finding] = []
    public private(set) var checks: [Check] = []
    /// The cloud user the device's mirror reported (nil before it first connected, or without a mirror).
    public private(set) var deviceUser: String?

    /// The CloudKit errors a device defers its changes for (`CloudKitError.Retry.afterRetryAfter`), for explanations.
    static let retriedAfterRetryAfter = CloudKitError.codes(retried: .afterRetryAfter).map(\.rawValue).sorted().joined(separator: ", ")

    /// One violation: what, where, why it matters and what to do.
    public struct Finding: Sendable, Hashable {
        public var kind: String
        public var store: String?
        public var objectID: String?
        public var zone: String?
        public var summary: String
        public var explanation: String
        public var fix: String

        public init(kind: String, store: String?, objectID: String?, zone: String?, summary: String, explanation: String, fix: String) {
            self.kind = kind
            self.store = store
            self.objectID = objectID
            self.zone = zone
            self.summary = summary
            self.explanation = explanation
            self.fix = fix
        }

        public var json: JSONValue {
            ["kind": .string(kind), "store": store.map { .string($0) } ?? .null, "objectID": objectID.map { .string($0) } ?? .null,
             "zone": zone.map { .string($0) } ?? .null, "summary": .string(summary), "explanation": .string(explanation), "fix": .string(fix)]
        }
    }

    public struct Check: Sendable, Hashable {
        public var name: String
        public var found: Int
        public var detail: String
        /// Not run (e.g. no cloud mirror to ask); neither passed nor failed.
        public var skipped = false

        public init(name: String, found: Int, detail: String, skipped: Bool = false) {
            self.name = name
            self.found = found
            self.detail = detail
            self.skipped = skipped
        }
    }

    public init(device: any InspectionConnection) { self.device = device }

    private mutating func record(_ name: String, _ found: [Finding], clean: String, dirty: String) {
        findings += found
        checks.append(.init(name: name, found: found.count, detail: found.isEmpty ? clean : dirty))
    }

    /// What one read of a device gives every check: its stores, model, shares and rows.
    struct DeviceView {
        var sharedStore: String?
        var shareZones: Set<String>
        var storeUUIDs: [String: String]
        var entities: [JSONValue]
        var model: JSONValue
        var rowsByEntity: [String: [[String: JSONValue]]]
        var allRows: [(String, [String: JSONValue])] { rowsByEntity.flatMap { entity, rows in rows.map { (entity, $0) } } }
    }

    public mutating func examineDevice() async throws(InspectionError) {
        let view = try await readDevice()
        examineSharedStoreZones(view)
        examineRelationships(view)
        examineSharedGraphs(entities: view.entities, rowsByEntity: view.rowsByEntity, sharedStore: view.sharedStore)
        try await examineOrphans(view)
        try await examineExports()
    }

    private func readDevice() async throws(InspectionError) -> DeviceView {
        let storeList = try await device.call("store.list", as: StoreListResult.self).stores
        let model = try await device.call("model.get")
        let shareZones = Set(try await device.call("share.list", as: ShareListResult.self).shares.map(\.zoneName))
        let sharedStore = storeList.first { $0.scope == .shared }?.name
        let storeUUIDs = Dictionary(storeList.map { ($0.name, $0.storeUUID) }, uniquingKeysWith: { first, _ in first })
        let entities = model["entities"]?.arrayValue ?? []

        var rowsByEntity: [String: [[String: JSONValue]]] = [:]
        for entity in entities.compactMap({ $0["name"]?.stringValue }) {
            rowsByEntity[entity] = try await device.rows(entity: entity)
        }

        return DeviceView(sharedStore: sharedStore, shareZones: shareZones, storeUUIDs: storeUUIDs, entities: entities, model: model,
                          rowsByEntity: rowsByEntity)
    }

    /// Every shared-store object must be in a share zone the device knows: nowhere else can it be exported.
    private mutating func examineSharedStoreZones(_ view: DeviceView) {
        let (sharedStore, shareZones, allRows) = (view.sharedStore, view.shareZones, view.allRows)
        var wrongStore: [Finding] = []
        var defaultZone: [Finding] = []
        var unknownZone: [Finding] = []
        if let sharedStore {
            for (entity, row) in allRows where row["store"]?.stringValue == sharedStore {
                let objectID = row["objectID"]?.stringValue
                let name = Self.describe(entity, row)
                guard let zone = row["zone"]?.stringValue else {
                    wrongStore.append(.init(kind: "wrongStore", store: sharedStore, objectID: objectID, zone: nil,
                        summary: "\(name) is in the \(sharedStore) store but in no share zone",
                        explanation: "The shared store only holds records of other people's shares, each in its share zone. An object saved there "
                            + "without one was routed by store load order (seed 002: legacy routing with the shared store loaded first, or an "
                            + "explicit assign). The mirror cannot export it: its only destination would be the shared database's core-data "
                            + "zone, which CloudKit refuses (\"Illegal attempt to work with the core-data or default zone in the shared database\").",
                        fix: "Move it to the private store (object.moveToStore keeps its uuid), and let new objects be routed deterministically "
                            + "(--routing deterministic, the default) or assign them to the private store."))
                    continue
                }
                if zone == ZoneID.coreDataZoneName || zone == ZoneID.defaultZoneName {
                    defaultZone.append(.init(kind: "sharedDefaultZone", store: sharedStore, objectID: objectID, zone: zone,
                        summary: "\(name) is in the shared store's \(zone)",
                        explanation: "The shared database has no core-data or default zone: every write of this record is refused with "
                            + "permissionFailure, so it never reaches the cloud and nobody else sees it.",
                        fix: "Move it to the private store, or into a real share zone (share.setMetadata with objectIDs)."))
                } else if !shareZones.contains(zone) {
                    unknownZone.append(.init(kind: "unknownShareZone", store: sharedStore, objectID: objectID, zone: zone,
                        summary: "\(name) is in zone \(zone), which the device has no share for",
                        explanation: "Without the zone's share metadata the device does not know the owner or its permission: edits are "
                            + "judged as the shared store's default and the mirror cannot address the owner's zone.",
                        fix: "Run 'meowctl sync fetch' (a fetch refreshes share metadata); if the share is gone, leave it ('meowctl share leave')."))
                }
            }
        }
        record("wrongStore", wrongStore, clean: "every shared-store object is in a share zone", dirty: "\(wrongStore.count) shared-store object(s) outside any share zone (seed 002)")
        record("sharedDefaultZone", defaultZone, clean: "no shared-store object in the core-data or default zone", dirty: "\(defaultZone.count) object(s) in a zone the shared database refuses")
        record("unknownShareZone", unknownZone, clean: "every share zone in use has share metadata", dirty: "\(unknownZone.count) object(s) in zones without a share")

    }

    /// The related object must be in the same store, and there.
    private mutating func examineRelationships(_ view: DeviceView) {
        let (entities, rowsByEntity, storeUUIDs) = (view.entities, view.rowsByEntity, view.storeUUIDs)
        let allRows = view.allRows
        let present = Set(allRows.compactMap { $0.1["objectID"]?.stringValue })
        let storeOfUUID = Dictionary(storeUUIDs.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        var crossStore: [Finding] = []
        for entity in entities {
            guard let entityName = entity["name"]?.stringValue else { continue }
            for relationship in entity["relationships"]?.arrayValue ?? [] where relationship["toMany"] != true {
                guard let key = relationship["name"]?.stringValue else { continue }
                for row in rowsByEntity[entityName] ?? [] {
                    guard let target = row[key]?.stringValue, let store = row["store"]?.stringValue else { continue }
                    let targetStore = Self.storeUUID(of: target).flatMap { storeOfUUID[$0] }
                    guard targetStore != store || !present.contains(target) else { continue }
                    let name = Self.describe(entityName, row)
                    crossStore.append(.init(kind: "crossStore", store: store, objectID: row["objectID"]?.stringValue, zone: row["zone"]?.stringValue,
                        summary: targetStore != store
                            ? "\(name) in the \(store) store points through '\(key)' at \(target) in the \(targetStore ?? "unknown") store"
                            : "\(name) in the \(store) store points through '\(key)' at \(target), which is not in the store",
                        explanation: "Core Data does not support persistent cross-store relationships: a save refuses them (133010), and a "
                            + "link that crossed stores anyway reads back as a dangling reference that fetches, the cloud mirror and the "
                            + "orphan repair cannot follow.",
                        fix: "Clear the relationship (object.set \(key) null) or point it at an object of the same store; to move an object "
                            + "between stores use object.moveToStore with the new relationship in its values."))
                }
            }
        }
        record("crossStore", crossStore, clean: "no relationship crosses stores or dangles", dirty: "\(crossStore.count) relationship(s) crossing stores or dangling")
    }

    /// Orphans, as the model's orphan repair defines them.
    private mutating func examineOrphans(_ view: DeviceView) async throws(InspectionError) {
        let (model, rowsByEntity, sharedStore) = (view.model, view.rowsByEntity, view.sharedStore)
        var orphans: [Finding] = []
        if let repair = model["orphanRepair"], let child = repair["childEntity"]?.stringValue, let key = repair["relationship"]?.stringValue {
            // An object whose relationship waits for a record not fetched yet is no orphan
            // (reported as pendingLink below). Asked as the exports check asks, so a connection
            // that answers a repeated read once (the cluster's checks) makes one request.
            var waiting: Set<String> = []
            if case let .success(status) = try await device.attempt("sync.status", ["unsent": true], as: SyncStatus.self) {
                for link in status.stores.flatMap(\.pendingLinks) where link.entity == child && link.relationship == key {
                    waiting.insert(link.recordName)
                }
            }
            for row in rowsByEntity[child] ?? [] where (row[key] == nil || row[key] == .null) && !waiting.contains(row["uuid"]?.stringValue ?? "") {
                let store = row["store"]?.stringValue ?? "?"
                orphans.append(.init(kind: "orphan", store: store, objectID: row["objectID"]?.stringValue, zone: row["zone"]?.stringValue,
                    summary: "\(Self.describe(child, row)) in the \(store) store has no \(key)",
                    explanation: "An orphan (seed 000): lists by \(key) never show it. Old data has them; the first repair tried to assign "
                        + "saved orphans to a store, which Core Data refuses (\"Can't reassign an object to a different store once it has been saved.\").",
                    fix: store == sharedStore
                        ? "It is in the shared store, so the default session (private store) cannot take it: set its \(key) to a session of the same share, or move it to the private store."
                        : "Run repair.orphans ('meowctl call --socket … repair.orphans'), which sets the relationship without an assign; start-up runs it unless --no-orphan-repair."))
            }
            record("orphan", orphans, clean: "every \(child) has a \(key)", dirty: "\(orphans.count) \(child)(s) without a \(key)")
        }

    }

    /// A share takes its whole graph: a shared-store object and the object a to-one
    /// relationship points at must be in one share zone.
    private mutating func examineSharedGraphs(entities: [JSONValue], rowsByEntity: [String: [[String: JSONValue]]], sharedStore: String?) {
        var zoneOf: [String: String] = [:]
        for row in rowsByEntity.values.joined() where row["store"]?.stringValue == sharedStore {
            if let id = row["objectID"]?.stringValue, let zone = row["zone"]?.stringValue { zoneOf[id] = zone }
        }
        var split: [Finding] = []
        for entity in entities {
            guard let entityName = entity["name"]?.stringValue else { continue }
            for relationship in entity["relationships"]?.arrayValue ?? [] where relationship["toMany"] != true {
                guard let key = relationship["name"]?.stringValue else { continue }
                for row in rowsByEntity[entityName] ?? [] {
                    guard let id = row["objectID"]?.stringValue, let zone = zoneOf[id], let target = row[key]?.stringValue,
                          let targetZone = zoneOf[target], targetZone != zone else { continue }
                    split.append(.init(kind: "shareGraphSplit", store: sharedStore, objectID: id, zone: zone,
                        summary: "\(Self.describe(entityName, row)) in zone \(zone) points through '\(key)' at \(target) in zone \(targetZone)",
                        explanation: "A share takes its whole object graph into its zone; a relationship between two shares' objects "
                            + "cannot be saved in the cloud, so the owner and the other participants never see it.",
                        fix: "Point '\(key)' at an object of the same share, or clear it (object.set \(key) null)."))
                }
            }
        }
        record("shareGraphSplit", split, clean: "no shared-store relationship reaches into another share",
               dirty: "\(split.count) shared-store relationship(s) reaching into another share")
    }

    private mutating func examineExports() async throws(InspectionError) {
        let status: SyncStatus
        switch try await device.attempt("sync.status", ["unsent": true], as: SyncStatus.self) {
        case let .success(value): status = value
        case let .failure(error):
            checks.append(.init(name: "exports", found: 0, detail: "not checked: \(error.code) (\(error.message))", skipped: true))
            return
        }
        deviceUser = status.user
        let lastError = status.lastError
        var stuck: [Finding] = []
        var deferred: [Finding] = []
        var unexportable: [Finding] = []
        var unimportable: [Finding] = []
        var waiting: [Finding] = []
        var undeployed: [Finding] = []
        var unsent: [Finding] = []
        let alreadyReported = Set(findings.compactMap(\.objectID))
        for store in status.stores {
            let name = store.store
            let (pending, held) = (store.pending, store.deferred)
            if pending > 0, let lastError {
                let zones = store.pendingByZone.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", ")
                stuck.append(.init(kind: "exportStuck", store: name, objectID: nil, zone: nil,
                    summary: "\(pending) change(s) of the \(name) store wait to be exported (\(zones)) and the last sync step failed: \(lastError.code)",
                    explanation: "The mirror's last step failed with \(lastError.code): \(lastError.message.trimmingCharacters(in: CharacterSet(charactersIn: "."))). Until a send succeeds "
                        + "these changes exist only on this device.",
                    fix: "Fix the cause (a cloud that is down, an account, a quota), then 'meowctl sync now'; 'meowctl log' shows the server's side."))
            }
            if held > 0 {
                let retry = lastError?.details["retryAfterSeconds"]
                deferred.append(.init(kind: "exportDeferred", store: name, objectID: nil, zone: nil,
                    summary: "\(held) change(s) of the \(name) store are deferred by a server retry-after\(retry.map { " (\($0.cell) s)" } ?? "")",
                    explanation: "The cloud answered with a transient error (\(Self.retriedAfterRetryAfter)) and a retry-after; "
                        + "the mirror does not send these entries before that time.",
                    fix: "Wait for the retry-after to pass and run 'meowctl sync send'; repeated deferrals mean the server is overloaded or faults are injected."))
            }
            for objectID in store.unexportable where !alreadyReported.contains(objectID) {
                unexportable.append(.init(kind: "unexportable", store: name, objectID: objectID, zone: nil,
                    summary: "\(objectID) in the \(name) store is reported unexportable by the mirror",
                    explanation: "sync.status lists shared-store objects outside any share zone (seed 002); the mirror never exports them.",
                    fix: "Move it to the private store (object.moveToStore) or into a share zone."))
            }
            for refused in store.unimportable {
                unimportable.append(.init(kind: "unimportable", store: name, objectID: nil, zone: refused.zone,
                    summary: "cloud record \(refused.recordName) (\(refused.entity), zone \(refused.zone)) was not imported into the \(name) store: \(refused.code)",
                    explanation: "The store refuses what the record holds: \(refused.message) Another client wrote it; this device "
                        + "leaves it out (the rest syncs) and tries again when the record changes.",
                    fix: "Correct the record in the cloud (a valid version is imported on the next fetch), or delete it there."))
            }
            undeployed += Self.undeployedSchema(store.refusedExports, store: name)
            for objectID in store.unsent ?? [] where !alreadyReported.contains(objectID) {
                unsent.append(.init(kind: "unsent", store: name, objectID: objectID, zone: nil,
                    summary: "\(objectID) in the \(name) store is neither in the cloud nor waiting to be sent",
                    explanation: "The mirror has no record of it and no queued change: it exists only on this device while the device counts 0 pending. "
                        + "(A link row, entity _A_b, is a many-to-many link.) The mirror found no zone for it when it was queued.",
                    fix: "Report it with 'meowctl log' and 'meowctl sync status --json'; saving the object again (any change) queues it anew."))
            }
            for link in store.pendingLinks {
                waiting.append(.init(kind: "pendingLink", store: name, objectID: nil, zone: link.zone,
                    summary: "\(link.entity) \(link.recordName) in the \(name) store waits for its \(link.relationship) record \(link.target) (\(JSONValue.double(link.waitingSeconds).cell) s)",
                    explanation: "The record was imported before the record its relationship names (another page, fetch or zone). The relationship "
                        + "stays empty until that record arrives and is then set; the orphan repair leaves the object alone meanwhile.",
                    fix: "Run 'meowctl sync fetch'. A link that keeps waiting names a record the cloud does not have (deleted, or in a zone this user cannot read): fix the record that names it."))
            }
        }
        record("exportStuck", stuck, clean: "no pending export behind a failed sync step", dirty: "exports stuck behind \(lastError.map { "\($0.code)" } ?? "an error")")
        record("exportDeferred", deferred, clean: "no export deferred by a retry-after", dirty: "exports deferred by the server")
        record("unexportable", unexportable, clean: "the mirror reports nothing unexportable beyond the findings above", dirty: "\(unexportable.count) object(s) the mirror cannot export")
        record("unimportable", unimportable, clean: "the store refused no cloud record", dirty: "\(unimportable.count) cloud record(s) the store refused")
        record("undeployedSchema", undeployed, clean: "production refused no record for its schema",
               dirty: "\(undeployed.count) record type(s) or field(s) production's schema does not have yet")
        record("unsent", unsent, clean: "every object is in the cloud or queued", dirty: "\(unsent.count) object(s) neither in the cloud nor queued")
        record("pendingLink", waiting, clean: "no relationship waits for a record", dirty: "\(waiting.count) relationship(s) wait for records not fetched yet")
    }

    /// One finding per record type or field a production cloud refused records for
    /// (`sync.status`'s `refusedExports` with `environment: production`).
    static func undeployedSchema(_ refused: [SyncStatus.RefusedExport], store: String) -> [Finding] {
        let production = refused.filter { $0.environment == CloudEnvironment.production.rawValue }
        let byName = Dictionary(grouping: production) { "\($0.recordType ?? "–")\u{0}\($0.field ?? "")" }
        return byName.keys.sorted().map { key in
            let records = byName[key]!
            let recordType = records[0].recordType ?? "–"
            let what = records[0].field.map { "field '\($0)' of record type '\(recordType)'" } ?? "record type '\(recordType)'"
            return Finding(kind: "undeployedSchema", store: store, objectID: nil, zone: nil,
                summary: "production's schema has no \(what): \(records.count) record(s) of the \(store) store wait to be exported",
                explanation: "The device syncs with the production environment, which defines nothing on save: its server refuses every record "
                    + "carrying a record type or field that was never deployed (\(records[0].message)). Development learned it when a "
                    + "development build saved it; the rest of the device's changes are exported.",
                fix: "Deploy development's schema to production: 'meowctl schema diff' to see it, then 'meowctl schema deploy --socket SYNC_SOCKET "
                    + "--credential ADMIN' (or --dir DIR); then 'meowctl sync now' on the device.")
        }
    }

    /// The cloud as the device's user sees it: its shared database must hold no core-data or
    /// default zone.
    public mutating func examineCloud(_ cloud: any InspectionConnection) async throws(InspectionError) {
        var mismatch: [Finding] = []
        if let deviceUser, let cloudUser = cloud.user, deviceUser != cloudUser {
            mismatch.append(.init(kind: "cloudUserMismatch", store: nil, objectID: nil, zone: nil,
                summary: "the credential is \(cloudUser)'s, but the device mirrors \(deviceUser)'s databases",
                explanation: "The cloud checks ran as another user than the device's, so they say nothing about this device.",
                fix: "Pass the credential of \(deviceUser)."))
        }
        record("cloudUser", mismatch, clean: "the credential is the device's cloud user (\(cloud.user ?? "?"))", dirty: "credential of another user")

        var zones: [JSONValue] = []
        var since = JSONValue.null
        while true {
            let page = try await cloud.call("changes.fetchDatabase", ["database": "shared", "since": since])
            zones += page["changedZones"]?.arrayValue ?? []
            guard page["moreComing"] == true else { break }
            since = page["token"] ?? .null
        }
        var found: [Finding] = []
        for zone in zones {
            let name = zone["zoneName"]?.stringValue ?? ""
            guard name == ZoneID.coreDataZoneName || name == ZoneID.defaultZoneName else { continue }
            let owner = zone["ownerName"]?.stringValue ?? "?"
            found.append(.init(kind: "cloudSharedDefaultZone", store: nil, objectID: nil, zone: "\(owner)/\(name)",
                summary: "\(cloud.user ?? "this user")'s shared database lists \(owner)'s \(name)",
                explanation: "\(owner) shared their whole \(name == ZoneID.coreDataZoneName ? "core-data" : "default") zone. Records there would be "
                    + "in the shared database's \(name), which CloudKit refuses: fetching or writing them fails with permissionFailure "
                    + "(\"Illegal attempt to work with the core-data or default zone in the shared database\").",
                fix: "\(owner) should stop that share (delete \(CloudKitNames.zoneShareName) in \(name)) and share sessions with 'meowctl share create', "
                    + "which moves them into a share zone of their own."))
        }
        record("cloudSharedDefaultZone", found, clean: "the shared database has no core-data or default zone (\(zones.count) shared zone(s))",
               dirty: "\(found.count) core-data/default zone(s) in the shared database")
        try await examineShareGraphs(cloud)
    }

    /// A share takes its whole object graph: every to-one reference of a record must name a
    /// record of the same zone. Reads both databases' records as the device's user.
    private mutating func examineShareGraphs(_ cloud: any InspectionConnection) async throws(InspectionError) {
        var references: [String: [String]] = [:]
        for entity in try await device.call("model.get")["entities"]?.arrayValue ?? [] {
            guard let name = entity["name"]?.stringValue else { continue }
            references[name] = (entity["relationships"]?.arrayValue ?? []).filter { $0["toMany"] != true }.compactMap(\.["name"]?.stringValue)
        }
        var items: [String: StoreCloudDiff.Item] = [:]
        var unreadable: [String] = []
        for database in ["private", "shared"] {
            try await StoreCloudDiff.cloudItems(cloud, database: database, into: &items, unreadable: &unreadable)
        }
        var split: [Finding] = []
        for (key, item) in items.sorted(by: { $0.key < $1.key }) {
            let name = String(key.drop { $0 != "|" }.dropFirst())
            for relationship in references[item.entity] ?? [] {
                guard let target = item.fields[CloudKitNames.coreDataName(relationship)],
                      let other = items[StoreCloudDiff.key(item.database, target)], other.zone != item.zone else { continue }
                split.append(.init(kind: "cloudShareGraphSplit", store: nil, objectID: nil, zone: item.zone,
                    summary: "\(item.entity) \(name) in \(item.zone) points through '\(relationship)' at \(other.entity) \(target) in \(other.zone)",
                    explanation: "A share takes its whole object graph into its zone. A relationship to a record in another zone cannot be "
                        + "followed by the share's participants (they see the object without its related one), and the owner's devices "
                        + "meet two zones for one graph.",
                    fix: "On the owner's device save a change to the object and run 'meowctl sync send': the mirror moves an object into "
                        + "the zone its related object is in. Objects of two different shares cannot be related: relate them within one share."))
            }
        }
        record("cloudShareGraphSplit", split, clean: "every relationship in the cloud stays within its zone (\(items.count) record(s))",
               dirty: "\(split.count) relationship(s) reaching into another zone")
    }

    public static func describe(_ entity: String, _ row: [String: JSONValue]) -> String {
        let id = row["id"]?.stringValue.map { " '\($0)'" } ?? ""
        return "\(entity)\(id) (\(row["objectID"]?.stringValue ?? "?"))"
    }

    /// `x-coredata://<storeUUID>/Entity/p1` → the store UUID; temporary IDs have none.
    public static func storeUUID(of objectID: String) -> String? {
        guard objectID.hasPrefix("x-coredata://") else { return nil }
        let rest = objectID.dropFirst("x-coredata://".count)
        guard let slash = rest.firstIndex(of: "/"), slash != rest.startIndex else { return nil }
        return String(rest[..<slash])
    }
}
