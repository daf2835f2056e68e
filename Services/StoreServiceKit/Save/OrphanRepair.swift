import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// The orphan repair: ensure the default parent, then attach every orphan to it. An orphan is
/// assigned to a store only if its ID is temporary and it has no store (to the session's store,
/// else the private store); saved orphans only get the relationship. Orphans in a store other
/// than the session's are left as they are and reported (a relationship across stores is not
/// allowed) — the [choice] documented in docs/differences-core-data.md.
struct OrphanRepair {
    /// The default parent's stable id (its cloud record name), the same on every device: each
    /// device that ensures "the" default session creates the same record, so after sync there
    /// is one default session, not one per device (scenario 17 of docs/SCENARIO-TESTS.md: the same logical object made
    /// offline on two devices becomes one record).
    static func defaultParentUUID(_ parent: EntityDescription) -> String {
        "default-\(parent.name)"
    }

    let rule: OrphanRepairRule
    let stores: StoreSet
    static let listLimit = 1000
    static let crossStoreReason = "crossStore: the default session is in another store and relationships cannot cross stores; left unattached"

    private var model: ManagedObjectModel { stores.model }

    private func defaultParentValues(_ parent: EntityDescription) throws -> [String: SQLValue] {
        var values: [String: SQLValue] = [:]
        for attribute in parent.attributes {
            let given = rule.defaultValues[attribute.name] ?? attribute.defaultValue ?? .null
            values[attribute.name] = try AttributeCoding.storageValue(given, for: attribute, entity: parent.name)
        }
        values[rule.defaultFlag] = .integer(1)
        for attribute in parent.attributes where !attribute.optional && values[attribute.name] == .null {
            throw ServiceError(.validationMissingMandatoryProperty,
                               "orphanRepair.defaultValues must give \(parent.name).\(attribute.name), a required attribute without a default.",
                               details: ["coreDataCode": 1570, "entity": .string(parent.name), "property": .string(attribute.name)])
        }
        return values
    }

    /// The start-up repair, run before anything else writes the stores. When opening found every
    /// store empty there is no session and no orphan to look for: the default session is inserted
    /// as `runInStores` would insert it (same row, history transaction and notice) without its
    /// searches, which on a new store only prepare statements that find nothing.
    func runAtStart(author: String, engine: StoreEngine) throws -> OrphanRepairReport {
        guard stores.list.allSatisfy(\.openedEmpty), let privateIndex = stores.privateIndex else {
            return try runInStores(author: author, engine: engine)
        }
        let store = stores.list[privateIndex]
        let parent = model.entity(named: rule.parentEntity)!
        let key = try engine.write(store, author: author, contextName: "orphanRepair") { changes in
            try insertDefaultParent(parent, into: store, recording: &changes)
        }
        return OrphanRepairReport(session: store.objectID(parent.name, key).uri, sessionCreated: true, attached: 0, attachedObjectIDs: [],
                                  assigned: [], skipped: [], skippedCount: 0, truncated: false)
    }

    /// Inserts the default parent into `store` with its history; returns its primary key.
    private func insertDefaultParent(_ parent: EntityDescription, into store: PersistentStore,
                                     recording changes: inout StoreChangeRecorder) throws -> Int64 {
        let values = try defaultParentValues(parent)
        let key = try store.allocatePrimaryKeys(parent.name, count: 1)
        let uuid = OrphanRepair.defaultParentUUID(parent)
        let row = PersistentStore.StoredRow(primaryKey: key, version: 1, uuid: uuid, zone: nil,
                                            values: parent.storedPropertyNames.map { values[$0] ?? .null })
        try store.insert(parent, row: row)
        try changes.inserted(parent, primaryKey: key, uuid: uuid, setProperties: row.values.map { $0 != .null })
        return key
    }

    /// Repairs directly in the stores, in one write (`StoreEngine.write`: the start-up repair; fast
    /// for many orphans: one UPDATE plus one packed history row). `announcingExcept`: the
    /// connection that asked, not told of the repair it made.
    func runInStores(author: String, engine: StoreEngine, announcingExcept connection: ConnectionHandle? = nil) throws -> OrphanRepairReport {
        guard let privateIndex = stores.privateIndex else { throw ServiceError(.unknownStore, "No private store is loaded.") }
        let store = stores.list[privateIndex]
        let parent = model.entity(named: rule.parentEntity)!
        let child = model.entity(named: rule.childEntity)!
        let parentTable = PersistentStore.table(parent.name)
        let childTable = PersistentStore.table(child.name)
        let column = "\"r_\(rule.relationship)\""
        var report = OrphanRepairReport(session: "", sessionCreated: false, attached: 0, attachedObjectIDs: [], assigned: [],
                                        skipped: [], skippedCount: 0, truncated: false)
        try engine.write(store, author: author, contextName: "orphanRepair", announcingExcept: connection) { changes in
            var sessionKey = try store.database.scalar("SELECT z_pk FROM \(parentTable) WHERE \"a_\(rule.defaultFlag)\" = 1 ORDER BY z_pk LIMIT 1")?.int64
            if sessionKey == nil {
                sessionKey = try insertDefaultParent(parent, into: store, recording: &changes)
                report.sessionCreated = true
            }
            let session = sessionKey!
            report.session = store.objectID(parent.name, session).uri
            // An object whose relationship waits for a record not fetched yet is no orphan.
            let orphan = "\(column) IS NULL AND " + (try PendingLinks.notWaiting(table: childTable, relationship: rule.relationship, in: store.database))
            let (childName, changed) = (child.name, JSONWriter.text(strings: [rule.relationship]))
            let (attached, history) = try attachOrphans(store: store, table: childTable, column: column, predicate: orphan, session: session) { rows in
                HistoryChanges.UpdateRun(entity: childName, changedJSON: changed, rows: rows)
            }
            if !attached.isEmpty {
                try changes.updated(history)
                report.attached = attached.count
                report.attachedObjectIDs = attached.keys.prefix(Self.listLimit).map { store.objectID(child.name, $0).uri }
                report.truncated = report.attached > Self.listLimit
                changes.announce(report.attachedObjectIDs)
            }
        }
        for (index, other) in stores.list.enumerated() where index != privateIndex && other.holds(child.name) {
            let table = PersistentStore.table(child.name)
            let orphan = "\(column) IS NULL AND " + (try PendingLinks.notWaiting(table: table, relationship: rule.relationship, in: other.database))
            report.skippedCount += try other.database.scalar("SELECT COUNT(*) FROM \(table) WHERE \(orphan)")?.int ?? 0
            for row in try other.database.query("SELECT z_pk FROM \(table) WHERE \(orphan) ORDER BY z_pk LIMIT ?", [Self.listLimit]) {
                report.skipped.append(.init(objectID: other.objectID(child.name, row[0].int64 ?? 0).uri, store: other.name, reason: Self.crossStoreReason))
            }
        }
        return report
    }

    /// Points every orphan at `session` in one UPDATE and returns the rows it changed in key
    /// order with their history. Many orphans in a file store are read, and their history
    /// written, beside the UPDATE on the second core (`ChangingRowsReader`); otherwise, or
    /// should that read fail, the UPDATE returns them itself.
    private func attachOrphans(store: PersistentStore, table: String, column: String, predicate: String, session: Int64,
                               history: @escaping @Sendable (UpdatedRows) -> HistoryChanges.UpdateRun) throws -> (UpdatedRows, HistoryChanges.UpdateRun) {
        let update = "UPDATE \(table) SET \(column) = ?, z_version = z_version + 1 WHERE \(predicate)"
        let database = store.database
        typealias Reader = ChangingRowsReader<HistoryChanges.UpdateRun>
        if let path = store.filePath,
           try database.scalar("SELECT 1 FROM \(table) WHERE \(predicate) LIMIT 1 OFFSET \(Reader.threshold - 1)") != nil,
           let reading = Reader.start(path: path, table: table, predicate: predicate, make: history) {
            try database.execute("SAVEPOINT orphan_update")
            try database.execute(update, [session])
            let changed = database.changes
            if let read = try? reading.value(), read.rows.count == changed {
                try database.execute("RELEASE orphan_update")
                return (read.rows, read.made)
            }
            try database.execute("ROLLBACK TO orphan_update")
            try database.execute("RELEASE orphan_update")
        }
        var rows = UpdatedRows()
        try database.cached(update + " RETURNING z_pk, z_uuid").forEach([session]) { (row: Statement) -> Void in rows.append(row: row) }
        rows.sortByKey()
        return (rows, history(rows))
    }

    /// Repairs inside a context, as an app's own start-up code would: each orphan is fetched into
    /// the context and attached there, never reassigned to a store; the client then saves.
    func runInContext(_ context: ManagedObjectContext) throws -> OrphanRepairReport {
        guard let privateIndex = stores.privateIndex else { throw ServiceError(.unknownStore, "No private store is loaded.") }
        let parent = model.entity(named: rule.parentEntity)!
        let child = model.entity(named: rule.childEntity)!
        var report = OrphanRepairReport(session: "", sessionCreated: false, attached: 0, attachedObjectIDs: [], assigned: [],
                                        skipped: [], skippedCount: 0, truncated: false)
        // ensureDefaultSession: one in the context, else one in a store, else a new one.
        var session = context.registered.first { $0.entity.name == parent.name && !$0.isDeleted && $0.value(rule.defaultFlag) == .integer(1) }
        if session == nil {
            let table = PersistentStore.table(parent.name)
            for store in stores.list where store.holds(parent.name) && session == nil {
                if let key = try store.database.scalar("SELECT z_pk FROM \(table) WHERE \"a_\(rule.defaultFlag)\" = 1 ORDER BY z_pk LIMIT 1")?.int64 {
                    session = try context.object(store.objectID(parent.name, key).uri, stores: stores)
                }
            }
        }
        if session == nil {
            let created = context.insert(entity: parent, uuid: OrphanRepair.defaultParentUUID(parent))
            created.snapshot = try defaultParentValues(parent)
            report.sessionCreated = true
            session = created
        }
        let defaultSession = session!
        report.session = defaultSession.uri
        // The target store: the session's store ?? the private store.
        let target = defaultSession.store ?? privateIndex
        if defaultSession.store == nil {
            defaultSession.store = target
            defaultSession.routing = .init(store: target, reason: .assigned, detail: "orphan repair: a new default session goes to the private store")
        }
        // Saved orphans from the stores join the context; unsaved ones are already in it.
        let column = "\"r_\(rule.relationship)\""
        var waiting: Set<String> = []
        for store in stores.list where store.holds(child.name) {
            let table = PersistentStore.table(child.name)
            let pending = try PendingLinks.notWaiting(table: table, relationship: rule.relationship, in: store.database)
            for row in try store.database.query("SELECT z_pk FROM \(table) WHERE \(column) IS NULL AND \(pending) ORDER BY z_pk") {
                _ = try context.object(store.objectID(child.name, row[0].int64 ?? 0).uri, stores: stores)
            }
            for row in try store.database.query("SELECT z_uuid FROM \(table) WHERE \(column) IS NULL AND NOT (\(pending))") {
                if let uuid = row[0].string { waiting.insert(uuid) }
            }
        }
        let orphans = context.registered.filter {
            $0.entity.name == child.name && !$0.isDeleted && $0.value(rule.relationship) == .null && !($0.store != nil && waiting.contains($0.uuid))
        }
        for orphan in orphans {
            if orphan.id.isTemporary && orphan.store == nil {
                orphan.store = target
                orphan.routing = .init(store: target, reason: .assigned, detail: "orphan repair: assigned to the default session's store")
                report.assigned.append(orphan.uri)
            }
            guard orphan.store == target else {
                report.skippedCount += 1
                if report.skipped.count < Self.listLimit {
                    report.skipped.append(.init(objectID: orphan.uri, store: orphan.store.map { stores.list[$0].name } ?? "", reason: Self.crossStoreReason))
                }
                continue
            }
            if let position = orphan.entity.position(of: rule.relationship) { orphan.setChange(.text(defaultSession.uri), at: position) }
            report.attached += 1
            if report.attachedObjectIDs.count < Self.listLimit { report.attachedObjectIDs.append(orphan.uri) } else { report.truncated = true }
        }
        return report
    }
}
