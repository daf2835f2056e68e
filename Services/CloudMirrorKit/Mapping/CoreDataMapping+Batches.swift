import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

/// Building a send's batches: each queued entry as the record (or delete) it sends, in the
/// zone its object belongs to now.
extension CoreDataMapping {
    /// Up to `count` next batches of the queue's due entries as records, payloads built now
    /// from the rows as they are, each of at most `limit` places. Reads the queue past
    /// `start`; writes nothing (it may run on the store's reading connection).
    /// `drops`: the entries read that have nothing to send, for `finishBatch` to remove.
    func buildBatches(from store: any MirrorStore, now: Double, limit: Int, count: Int, skipped: Set<String>, after start: Int64,
                      touched: Set<String>, drops: inout [MirrorBookkeeping.Pending], report: inout SyncSendResult) throws -> [[MirrorEngine.SendItem]] {
        let state = try CoreDataStore.of(store).state
        // One state of the store for every batch: what a batch works out (zones, related
        // records' names) holds for the next.
        var caches = BatchCaches()
        // Most sends have no relationship waiting: then no entry looks for refused ones.
        caches.anyWaiting = try !PendingLinks(database: state.store.database).isEmpty
        var built: [[MirrorEngine.SendItem]] = []
        var position = start
        while built.count < count {
            let items = try buildBatch(state: state, now: now, limit: limit, skipped: skipped, after: position, touched: touched,
                                       caches: &caches, drops: &drops, report: &report, readThrough: &position)
            if items.isEmpty { break }
            built.append(items)
        }
        return built
    }

    /// What building a send's batches works out once for all of them.
    private struct BatchCaches {
        var zones = ZoneCache()
        var texts = MirrorRecordCoding.TextCache()
        var anyWaiting = false
    }

    /// One batch. `readThrough`: the queue position of the last entry it took (as an item, a
    /// drop, or one to skip); the next batch is read from past it.
    private func buildBatch(state: StoreBookkeeping, now: Double, limit: Int, skipped: Set<String>, after start: Int64,
                            touched: Set<String>, caches: inout BatchCaches, drops: inout [MirrorBookkeeping.Pending],
                            report: inout SyncSendResult, readThrough: inout Int64) throws -> [MirrorEngine.SendItem] {
        var items: [MirrorEngine.SendItem] = []
        var count = 0
        var after = start
        while count < limit {
            let due = try state.dueEntries(now: now, limit: limit, after: after)
            guard let lastSeq = due.last?.pending.seq else { break }
            after = lastSeq
            for entry in due {
                // Full: the rest of what was read is the next batch's.
                if count >= limit { break }
                readThrough = entry.pending.seq
                if skipped.contains(entry.pending.uuid) { continue }
                switch try plan(entry, state: state, touched: touched, anyWaiting: caches.anyWaiting, zones: &caches.zones, texts: &caches.texts) {
                case let .send(item, weight):
                    items.append(item)
                    count += weight
                case let .drop(counted):
                    drops.append(entry.pending)
                    if counted { report.dropped += 1 }
                }
            }
            if due.count < limit { break }
        }
        return items
    }

    /// What a queued entry sends: an item and the batch places it takes (a move is a save and a
    /// delete), or nothing (`counted`: reported as dropped).
    private enum Planned {
        case send(MirrorEngine.SendItem, weight: Int)
        case drop(counted: Bool)
    }

    private func plan(_ entry: MirrorBookkeeping.DueEntry, state: StoreBookkeeping, touched: Set<String>, anyWaiting: Bool,
                      zones: inout ZoneCache, texts: inout MirrorRecordCoding.TextCache) throws -> Planned {
        let store = state.store
        let pending = entry.pending
        guard let entity = store.model.entity(named: pending.entity) else { return .drop(counted: false) }
        let meta = entry.meta
        if pending.kind == .delete {
            // Never reached the server: nothing to delete there.
            guard let meta else { return .drop(counted: true) }
            return .send(MirrorEngine.SendItem(pending: pending, record: nil, delete: meta.zone), weight: 1)
        }
        // Scenario 21: the row is gone (its delete follows, or it never existed): upload nothing.
        guard store.holds(entity.name), let row = try Self.row(of: pending, entity: entity, store: store),
              let zone = try Self.zone(for: pending.uuid, entity: entity, row: row, state: state, cache: &zones) else { return .drop(counted: true) }
        // An update of a record the server has where it stays carries only the keys this
        // device changed (and the stamps): the server keeps the rest, so fields another
        // app version writes, or another device changed meanwhile, are never sent back
        // stale. A new record, a move, or an update whose keys are unknown carries all.
        // An update's changed keys, parsed once (the partial payload and the nulls both need them).
        let edited = meta != nil && pending.kind != .insert ? pending.changed : []
        let only = pending.kind == .update && meta?.zone == zone && !edited.isEmpty ? edited.union([MirrorBookkeeping.fieldTimesField]) : nil
        var fields = try MirrorRecordCoding.fieldsText(entity: entity, row: row, state: state, timesText: entry.timesText,
                                                       only: only, cache: &texts)
        // The first ordinary save after a move drops the move's bookkeeping field (the
        // server keeps a key a save leaves out).
        let dropped = only != nil && entry.movedFromKept ? [MovedFrom.field] : []
        fields = Self.clearing(edited, entity: entity, row: row, also: dropped, assetThreshold: store.assetThreshold, in: fields)
        var record = CloudRecord(recordName: pending.uuid, zoneID: zone, recordType: CloudKitNames.coreDataName(entity.name))
        var move: ZoneID?
        var partial = false
        // A save where the record is sends empty each relationship this device refused: the
        // cloud would otherwise keep the other user's name under this device's modification.
        let refused = try meta == nil || !anyWaiting ? [] : state.zoneRefusedLinks(of: pending.uuid, entity: entity, row: row)
        let unsaid = refused.map { MirrorRecordCoding.fieldName($0.relationship) }.filter { !edited.contains($0) }
        if !unsaid.isEmpty { fields = Self.clearing([], entity: entity, row: row, also: unsaid, in: fields) }
        if let meta {
            if meta.zone == zone {
                record.recordChangeTag = meta.changeTag
                partial = only != nil
                record.fieldsText = fields
                return .send(MirrorEngine.SendItem(pending: pending, record: record, delete: nil, partial: partial,
                                      clearedLinks: refused), weight: 1)
            } else if let tag = meta.changeTag, !touched.contains(pending.uuid) {
                // A move deletes the old copy unconditionally. It is first saved where it
                // is, with its tag: another device's edit there since the last fetch
                // fails it (serverRecordChanged: merged, then moved), and so does a copy
                // another device moved or deleted meanwhile (unknownItem: the store's
                // changes are fetched and tell which), rather than a move that deletes
                // the edit, or leaves a second copy of the record in another zone.
                record.zoneID = meta.zone
                record.recordChangeTag = tag
                record.fieldsText = fields
                return .send(MirrorEngine.SendItem(pending: pending, record: record, delete: nil, touch: true,
                                      clearedLinks: refused), weight: 1)
            } else {
                move = meta.zone
                // The tag it was moved from lets a device whose edit a move deleted
                // anyway (in the moment between the two) see it (`MovedFrom`).
                if let tag = meta.changeTag { fields = MovedFrom(zoneName: meta.zone.zoneName, changeTag: tag).adding(to: fields) }
            }
        }
        record.fieldsText = fields
        return .send(MirrorEngine.SendItem(pending: pending, record: record, delete: move, partial: partial),
                     weight: move == nil ? 1 : 2)
    }

    /// The fields text with a null for each field this update cleared: the server keeps every
    /// key a save leaves out (another app version's fields among them), so a cleared field left
    /// out would keep its old value. Fields nobody changed here are left out, not cleared;
    /// `extra` fields are cleared too.
    static func clearing(_ changed: Set<String>, entity: EntityDescription, row: PersistentStore.StoredRow,
                         also extra: [String] = [], assetThreshold: Int = StoreOptions.defaultAssetThreshold, in text: String) -> String {
        let names = entity.storedPropertyNames
        var cleared = extra
        if !changed.isEmpty {
            for (position, value) in row.values.enumerated() where value.isNull && position < names.count {
                let field = MirrorRecordCoding.fieldName(names[position])
                if changed.contains(field) { cleared.append(field) }
            }
            // A data value is in one of its two fields: the other is cleared (a value that grew
            // past the threshold leaves its bytes field, one that shrank its asset).
            for (position, attribute) in entity.attributes.enumerated() where attribute.type.isData {
                let field = MirrorRecordCoding.fieldName(attribute.name)
                guard changed.contains(field) else { continue }
                let value = row.values[position]
                if value.isNull || (value.bytes?.count ?? 0) <= assetThreshold {
                    cleared.append(MirrorRecordCoding.assetFieldName(attribute.name))
                } else {
                    cleared.append(field)
                }
            }
        }
        guard !cleared.isEmpty, text.hasSuffix("}") else { return text }
        var out = String(text.dropLast())
        for field in cleared.sorted() {
            if out != "{" { out += "," }
            JSONWriter.appendString(field, to: &out)
            out += ":null"
        }
        return out + "}"
    }

    /// Whether another device changed what the server's copy of a record belongs to (a
    /// relationship differs from the ancestor's), and the object it now relates to is in
    /// another zone on this device: the record belongs elsewhere, and that device moves it.
    /// (A relationship unchanged is no sign: this device may have moved the object itself.)
    static func movingElsewhere(_ server: CloudRecord, ancestor: [String: JSONValue]?, entity: EntityDescription,
                                        state: StoreBookkeeping) throws -> Bool {
        guard let ancestor else { return false }
        let fields = server.fields
        let before = MirrorRecordCoding.relationshipNames(entity: entity, fields: ancestor)
        for (relationship, name) in MirrorRecordCoding.relationshipNames(entity: entity, fields: fields) {
            guard let name, before[relationship] != .some(name) else { continue }
            if let zone = try state.meta(name)?.zone, zone != server.zoneID { return true }
        }
        return false
    }

    /// The row an entry is about: by its primary key when the entry has one (no trip through
    /// the uuid index), checked against its uuid, else by uuid.
    private static func row(of pending: MirrorBookkeeping.Pending, entity: EntityDescription, store: PersistentStore) throws -> PersistentStore.StoredRow? {
        if let key = pending.primaryKey, let row = try store.read(entity, primaryKey: key), row.uuid == pending.uuid { return row }
        return try store.read(entity, uuid: pending.uuid)
    }
}
