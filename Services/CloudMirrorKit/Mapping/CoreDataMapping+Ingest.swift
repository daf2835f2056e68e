import CloudWire
import Foundation
import MeowWire
import StoreServiceKit

extension CoreDataMapping {
    // MARK: Ingest: history → outgoing queue

    func queueHistory(of store: any MirrorStore, enough: Int?) throws -> IngestOutcome {
        try ingest(CoreDataStore.of(store).store, enough: enough)
    }

    /// Moves the store's history after the export cursor into the queue, skipping the mirror's
    /// own imports (author `sync`: no echo). One SQLite transaction: queue and cursor together.
    /// `enough`: stops (at a transaction's end) once that many changes were queued, so a send
    /// puts its first batch on the wire before the rest of a large history is queued, and the
    /// rest is queued while the server works (the send's next batches ask for more).
    @discardableResult
    func ingest(_ store: PersistentStore, enough: Int?) throws -> IngestOutcome {
        let state = StoreBookkeeping(store)
        var queued = 0
        var cache = IngestCache()
        while true {
            let cursor = Int(try state.value(MirrorBookkeeping.exportCursorKey) ?? "0") ?? 0
            if try historyWasPurged(after: cursor, store: store) {
                try write(store) { _ in try queueByComparison(state, after: cursor) }
                continue
            }
            let transactions = try PersistentHistory.fetchStored(store, afterToken: cursor, limit: enough == nil ? 2000 : 16,
                                                                 skippingChangesOf: SaveOperation.syncAuthor)
            guard !transactions.isEmpty else { return IngestOutcome(queued: queued) }
            var faults: [String] = []
            var reachedEnough = false
            try write(store, commit: .deferred) { _ in
                var last = cursor
                for transaction in transactions {
                    if transaction.author != SaveOperation.syncAuthor {
                        let time = MirrorRecordCoding.seconds(iso: transaction.timestamp) ?? clock.seconds()
                        for change in transaction.entries {
                            faults += try ingest(change, time: time, state: state, cache: &cache)
                        }
                        try cache.flush(state)
                        if !cache.inserted.isEmpty {
                            try state.dropFieldTimes(cache.inserted)
                            cache.inserted.removeAll(keepingCapacity: true)
                        }
                        queued += transaction.entries.count
                    }
                    last = transaction.token
                    if let enough, queued >= enough { reachedEnough = true; break }
                }
                try state.setValue(MirrorBookkeeping.exportCursorKey, String(last))
            }
            for zone in faults {
                // What iOS prints, exactly; the device keeps running.
                logger.rawLine("CoreData: fault: Illegal attempt to work with the core-data or default zone in the shared database: \(zone)")
            }
            if reachedEnough { return IngestOutcome(queued: queued, more: true) }
        }
    }

    /// Whether a client purged history the mirror had not queued yet (history.purge).
    private func historyWasPurged(after cursor: Int, store: PersistentStore) throws -> Bool {
        let last = Int(store.lastToken)
        guard last > cursor else { return false }
        let oldest = try store.database.scalar("SELECT min(token) FROM z_transaction")?.int
        return (oldest ?? last + 1) > cursor + 1
    }

    /// History the mirror needed is gone: the queue is rebuilt by comparing every row with what
    /// the cloud last had (its ancestor fields): new rows are queued as inserts, changed fields as
    /// updates, known records without a row as deletes. Then the cursor moves to the newest token.
    /// A changed field is stamped with the time of its newest edit the history still has, else
    /// with the newest purged transaction's time (its edit was made by then). Stamped "now",
    /// an edit older than another device's later one won their conflict.
    private func queueByComparison(_ state: StoreBookkeeping, after cursor: Int) throws {
        let store = state.store
        let fallback = try PersistentHistory.purgedThrough(store) ?? clock.seconds()
        let edited = try Self.editTimes(store, after: cursor)
        var present: Set<String> = []
        for entity in store.entities.values {
            for row in try store.database.query("SELECT z_pk, z_uuid, z_zone FROM \(PersistentStore.table(entity.name))") {
                guard let key = row[0].int64, let uuid = row[1].string else { continue }
                present.insert(uuid)
                if store.scope == .shared, row[2].isNull { continue }
                guard let stored = try store.read(entity, primaryKey: key) else { continue }
                let fields = MirrorRecordCoding.dataFields(try MirrorRecordCoding.fields(entity: entity, row: stored, state: state, timesText: nil))
                guard let meta = try state.meta(uuid, withFields: true) else {
                    try state.enqueue(uuid: uuid, entity: entity.name, kind: .insert, zone: nil, changed: Set(fields.keys))
                    continue
                }
                let ancestor = MirrorRecordCoding.dataFields(meta.serverFields)
                let changed = Set(fields.keys).union(ancestor.keys).filter { fields[$0] != ancestor[$0] }
                if !changed.isEmpty {
                    let times = edited[uuid] ?? [:]
                    try state.setFieldTimes(uuid, Dictionary(uniqueKeysWithValues: changed.map { field in
                        (field, FieldStamp(time: times[field] ?? fallback, device: options.deviceName))
                    }))
                    try state.enqueue(uuid: uuid, entity: entity.name, kind: .update, zone: nil, changed: changed)
                }
            }
        }
        for row in try store.database.query("SELECT uuid, entity, zone_name, owner_name FROM mirror_meta") {
            guard let uuid = row[0].string, !present.contains(uuid) else { continue }
            try state.enqueue(uuid: uuid, entity: row[1].string ?? "", kind: .delete,
                              zone: ZoneID(zoneName: row[2].string ?? "", ownerName: row[3].string ?? ""), changed: [])
        }
        try state.setValue(MirrorBookkeeping.exportCursorKey, String(store.lastToken))
        logger.notice("history the mirror had not queued was purged; the queue was rebuilt by comparing rows with the cloud's copies",
                      ["store": .string(store.name)])
    }

    /// Per object, per field (`CD_…`), the time of its newest local edit in the history after
    /// `cursor` (imports are not edits made here).
    private static func editTimes(_ store: PersistentStore, after cursor: Int) throws -> [String: [String: Double]] {
        var times: [String: [String: Double]] = [:]
        var token = cursor
        while true {
            let page = try PersistentHistory.fetchStored(store, afterToken: token, limit: 500, skippingChangesOf: SaveOperation.syncAuthor)
            guard let last = page.last else { return times }
            for transaction in page where transaction.author != SaveOperation.syncAuthor {
                guard let time = MirrorRecordCoding.seconds(iso: transaction.timestamp) else { continue }
                for entry in transaction.entries where entry.kind != .delete {
                    for property in entry.changed ?? [] {
                        let field = MirrorRecordCoding.fieldName(property)
                        times[entry.uuid, default: [:]][field] = max(times[entry.uuid]?[field] ?? time, time)
                    }
                }
            }
            token = last.token
        }
    }

    static let sharedDefaultZoneDescription =
        "<CKRecordZoneID: zoneName=\(ZoneID.coreDataZoneName), ownerName=\(ZoneID.defaultOwner)>"

    /// Queues one history change; returns the zone descriptions of seed-002 faults it hit.
    /// A new object's queue and stamps texts for the last changed-property list and stamp: a
    /// bulk save's inserts repeat both, and building them per object was a twentieth of a send.
    struct IngestCache {
        var key: (changed: [String], stamp: FieldStamp)?
        var names: Set<String> = []
        var changedText = ""
        var stampsText = ""
        /// New objects of the history transaction being queued: any stamps row their uuids
        /// still have (an earlier life of the uuid) is dropped once, after the transaction.
        var inserted: [String] = []
        /// New objects not queued yet, of one entity and `key`: queued together
        /// (`MirrorBookkeeping.enqueueNewObjects`) before any other change, so the queue keeps
        /// history's order.
        var waiting: (entity: String, objects: [(uuid: String, primaryKey: Int64)])?

        mutating func flush(_ state: StoreBookkeeping) throws {
            guard let batch = waiting else { return }
            waiting = nil
            try state.enqueueNewObjects(entity: batch.entity, objects: batch.objects, changedText: changedText,
                                        timesText: names.isEmpty ? nil : stampsText)
        }
    }

    private func ingest(_ change: HistoryChanges.Entry, time: Double, state: StoreBookkeeping, cache: inout IngestCache) throws -> [String] {
        let store = state.store
        guard let entity = store.model.entity(named: change.entity) else { return [] }
        let kind = change.kind
        let stamp = FieldStamp(time: time, device: options.deviceName)
        // Anything but another new object like the waiting ones is queued after them.
        if kind != .insert || cache.waiting?.entity != entity.name || cache.key?.changed != (change.changed ?? []) || cache.key?.stamp != stamp {
            try cache.flush(state)
        }
        if kind == .delete {
            try state.clearUnexportable(change.uuid)
            try state.enqueue(uuid: change.uuid, entity: entity.name, kind: .delete, zone: try state.meta(change.uuid)?.zone, changed: [])
            return []
        }
        if store.scope == .shared {
            let key = change.primaryKey
            // A row gone since (its delete follows in history) is not looked at.
            guard let row = try store.read(entity, primaryKey: key) else { return [] }
            if row.zone == nil {
                if try state.markUnexportable(uuid: change.uuid, objectID: store.objectID(entity.name, key).uri, zone: Self.sharedDefaultZoneDescription) {
                    return [Self.sharedDefaultZoneDescription]
                }
                return []
            }
        }
        if kind == .insert, store.scope == .private, entity.name.hasPrefix("_"), store.model.isLinkEntity(entity.name) {
            try cache.flush(state)
            try queueSidesJoiningAShare(link: entity, primaryKey: change.primaryKey, state: state)
        }
        if kind == .insert {
            // A new object: its stamps are these alone, one group (nothing to read and merge).
            let changed = change.changed ?? []
            if cache.key?.changed != changed || cache.key?.stamp != stamp {
                cache.names = Set(changed.map(MirrorRecordCoding.fieldName))
                let sorted = cache.names.sorted()
                cache.changedText = JSONWriter.text(strings: sorted)
                cache.stampsText = FieldStamp.encode(sorted, stamp)
                cache.key = (changed, stamp)
            }
            // Its stamps ride in its queue entry (a stale stamps row would hide them: see `inserted`).
            cache.inserted.append(change.uuid)
            if cache.waiting == nil { cache.waiting = (entity.name, []) }
            cache.waiting!.objects.append((change.uuid, change.primaryKey))
            return []
        }
        let names = Set((change.changed ?? []).map(MirrorRecordCoding.fieldName))
        try state.setFieldTimes(change.uuid, Dictionary(uniqueKeysWithValues: names.map { ($0, stamp) }))
        try state.enqueue(uuid: change.uuid, entity: entity.name, kind: kind, zone: nil, changed: names, primaryKey: change.primaryKey)
        return []
    }

    /// A many-to-many link made in the private store can bring a side that is in Core Data's
    /// zone into a share (`zone(for:)`: a tag put on a shared photo joins its share). Nothing of
    /// that side changed, so it is queued here, as an update whose changed keys are unknown: its
    /// send moves it, whole, into the share zone. A side whose zone stays is not queued.
    private func queueSidesJoiningAShare(link: EntityDescription, primaryKey: Int64, state: StoreBookkeeping) throws {
        guard let row = try state.store.read(link, primaryKey: primaryKey) else { return }
        for (entity, side) in try ObjectGraph(store: state.store).toOneTargets(of: link, row: row) {
            guard let meta = try state.meta(side.uuid), meta.zone.zoneName == ZoneID.coreDataZoneName,
                  let zone = try CoreDataMapping.zone(for: side.uuid, entity: entity, state: state), zone.zoneName != meta.zone.zoneName else { continue }
            try state.enqueue(uuid: side.uuid, entity: entity.name, kind: .update, zone: nil, changed: [], primaryKey: side.primaryKey)
        }
    }
}
