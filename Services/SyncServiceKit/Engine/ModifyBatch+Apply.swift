import CloudWire
import FoundationEssentials
import MeowWire

/// A batch's decisions applied: rows, versions, change log and the answer, in the request's transaction.
extension ModifyBatch {
    func apply(zone: ZoneRow, indices: [Int], items: [Item], plans: [Int: Plan], outcome: inout ModifyOutcome) throws {
        var parentsToBump: [String] = []
        var savedStored: [(StoredRecord, [String: JSONValue]?)] = []
        // The request log's share facts, noted once the request has changed the shares they name.
        var shareChanges: [(change: String, share: String)] = []
        var savedWrites: [(record: CloudRecord, stored: StoredRecord, before: StoredRecord?, fieldsJSON: String, fields: [String: JSONValue]?)] = []
        // Saves past the writes the request log keeps are only counted (`RequestTrace.writesKept`).
        var writesLeftOut = 0
        for index in indices {
            guard case let .save(record, fieldsJSON, fields, share, existing)? = plans[index] else { continue }
            let stored = try state.storeRecord(zone: zone, name: record.recordName, type: record.recordType, fieldsJSON: fieldsJSON,
                                               parent: record.parent?.recordName, share: share, previous: existing, user: caller)
            savedStored.append((stored, fields))
            if trace != nil {
                let before = existing.flatMap { $0.deleted ? nil : $0 }
                if trace?.keepsWrite(after: savedWrites.count) == true {
                    savedWrites.append((record, stored, before, fieldsJSON, fields))
                } else {
                    writesLeftOut += 1
                }
                if record.isShare { shareChanges.append((before == nil ? "created" : "changed", record.recordName)) }
            }
            if !record.isShare {
                let created = existing.map(\.deleted) ?? true
                state.recordChanges.append(RecordChange(zone: zone.id, name: stored.name, type: stored.type, fieldsText: stored.fields,
                                                        reason: created ? "recordCreated" : "recordUpdated", share: stored.share,
                                                        parent: stored.parent, previousParent: existing?.parent))
            }
            if let parent = record.parent?.recordName, !parentsToBump.contains(parent) { parentsToBump.append(parent) }
            if record.isShare && existing.flatMap({ $0.deleted ? nil : $0 }) == nil {
                let root = plans.values.lazy.compactMap { plan -> String? in
                    if case let .save(candidate, _, _, share, _) = plan, share == record.recordName, !candidate.isShare { return candidate.recordName }
                    return nil
                }.first
                try state.createShare(zone: zone, name: record.recordName, root: root)
            }
        }
        if !parentsToBump.isEmpty {
            // A parent this request saved has its new tag already.
            let savedNames = Set(savedStored.lazy.map { $0.0.name })
            for parent in parentsToBump where !savedNames.contains(parent) {
                try state.bumpRecord(zone: zone, name: parent, user: caller)
            }
        }
        // Every save and new share of the zone is in place: each saved record's share is found
        // whatever the order of parents and children in the batch.
        for write in savedWrites {
            try trace?.noteWrite("saved", record: write.record.recordName, type: write.record.recordType, zone: zone.zoneID,
                                 changed: Self.changedFields(write.before?.fields, write.fieldsJSON, write.fields),
                                 share: try state.governingShare(zone: zone.id, of: write.stored))
        }
        trace?.omitWrites(writesLeftOut)
        for index in indices {
            switch plans[index] {
            case let .delete(live?)?:
                try trace?.noteWrite("deleted", record: live.name, type: live.type, zone: zone.zoneID,
                                     share: try state.governingShare(zone: zone.id, from: live.name))
                if live.type == CloudKitNames.shareRecordType {
                    try state.endShare(zone: zone, name: live.name, user: caller)
                    shareChanges.append(("stopped", live.name))
                } else {
                    if let share = live.share { shareChanges.append(("stopped", share)) }
                    if let share = live.share { try state.endShare(zone: zone, name: share, user: caller) }
                    try state.tombstone(zone: zone, name: live.name, user: caller)
                    state.recordChanges.append(RecordChange(zone: zone.id, name: live.name, type: live.type, fieldsText: live.fields, reason: "recordDeleted",
                                                            share: live.share, parent: live.parent))
                }
                outcome.deleted.append(RecordID(recordName: live.name, zoneID: items[index].zoneID))
            case .delete(nil)?:
                outcome.deleted.append(RecordID(recordName: items[index].recordName, zoneID: items[index].zoneID))
            case let .leaveShare(share)?:
                try state.setAcceptance(zone: zone, share: share, user: caller, to: .removed)
                shareChanges.append(("left", share))
                outcome.deleted.append(RecordID(recordName: share, zoneID: items[index].zoneID))
            default:
                continue
            }
        }
        if let trace {
            for change in shareChanges { try state.noteShare(change.change, share: change.share, zone: zone, trace: trace) }
        }
        let presented = zone.zoneID.presented(to: caller)
        for (stored, fields) in savedStored {
            // Share records and roots may have changed again in this request (share created or ended).
            let changedSince = stored.type == CloudKitNames.shareRecordType || stored.share != nil
            let current = changedSince ? try state.liveRecord(zone: zone.id, name: stored.name) ?? stored : stored
            guard savedForm == .records else {
                var saved = try state.render(current, zone: zone, presentedZoneID: presented, fields: [:])
                saved.omitsFields = true
                saved.tagOnly = savedForm == .tags
                outcome.saved.append(saved)
                continue
            }
            var saved = try state.render(current, zone: zone, presentedZoneID: presented, fields: changedSince ? nil : fields ?? [:])
            if !changedSince, fields == nil, let text = current.fields {
                // Fields kept as text: the reply writes the stored text; nothing parses it.
                saved.fieldsText = text
            }
            outcome.saved.append(saved)
        }
        try state.touchZone(zone)
    }

    /// The names of the fields whose value differs between a record's stored fields (text) and
    /// its new ones (text, and their tree when the request parsed them), sorted; every new field
    /// when there were none. Fields in stored form are compared as text, without a tree.
    static func changedFields(_ before: String?, _ afterText: String, _ after: [String: JSONValue]?) -> [String] {
        if let changed = StoredFields.changedNames(from: before ?? "{}", to: afterText) { return changed }
        let old = before.flatMap { try? JSONParser.parse($0).objectValue } ?? [:]
        let new = after ?? (try? JSONParser.parse(afterText).objectValue) ?? [:]
        return Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }.sorted()
    }
}
