import CloudWire
import FoundationEssentials
import MeowWire

/// Each item of a batch decided by CloudKit's table (policy, tag, permission, limits) before anything is written.
extension ModifyBatch {
    /// `existing`: the zone's row of this name (live or tombstone), if it has one.
    func planSave(_ record: CloudRecord, fieldsJSON: String?, zone: ZoneRow, pending: [String: CloudRecord],
                          deleteNames: Set<String>, existing: StoredRecord?, liveParents: inout [String: Bool]) throws -> Plan {
        // fieldsJSON is nil exactly when the fields have a problem (see modifyRecords).
        if fieldsJSON == nil, let problem = FieldValidation.problem(in: record.fields) {
            throw WireError(.invalidArguments, "Record '\(record.recordName)': \(problem.message).", details: ["field": .string(problem.field)])
        }
        guard !record.recordName.isEmpty, !record.recordType.isEmpty else {
            throw WireError(.invalidArguments, "A record needs a non-empty recordName and recordType.")
        }
        if let problem = CloudKitNames.problem(recordName: record.recordName) {
            throw WireError(.invalidArguments, "Record \(CloudKitNames.quoted(record.recordName)): \(problem).")
        }
        guard let fieldsJSON else { throw WireError(.invalidArguments, "Record '\(record.recordName)' has invalid fields.") }
        let limit = state.limits.maxRecordBytes
        let assetBytes = try AssetFields.check(fieldsJSON, record: record.recordName, limits: state.limits)
        guard fieldsJSON.utf8.count - assetBytes <= limit else {
            throw WireError(.limitExceeded, "Record '\(record.recordName)' is \(fieldsJSON.utf8.count - assetBytes) bytes; a record may hold at most \(limit).",
                            details: ["bytes": .int(fieldsJSON.utf8.count - assetBytes), "maxRecordBytes": .int(limit)])
        }
        let live = existing.flatMap { $0.deleted ? nil : $0 }
        if let live, live.type != record.recordType && (live.type == CloudKitNames.shareRecordType || record.isShare) {
            throw WireError(.invalidArguments, "Record '\(record.recordName)' cannot change between a share and a non-share record.")
        }
        let share = record.isShare ? nil : (record.share?.recordName ?? live?.share)
        if scope == .shared {
            try checkSharedSave(record, live: live, share: share, zone: zone, pending: pending)
        } else {
            trace?.decide(true, "owner writes own zone", zone: zone.zoneID, record: record.recordName)
        }
        if record.isShare { try checkNewShare(record, live: live, zone: zone, pending: pending) }
        if let share, share != live?.share { try checkNewRoot(record, share: share, live: live, zone: zone, pending: pending) }
        if let share, let up = try state.governingShare(zone: zone.id, from: record.parent?.recordName, pending: pending), up != share {
            throw WireError(.alreadyShared, "Record '\(record.recordName)' is the root of share '\(share)' and its parent is already in share '\(up)'; a record can be in one share only.",
                            details: ["share": .string(share), "otherShare": .string(up)])
        }
        try checkTag(record, live: live, existing: existing, zone: zone)
        if let parent = record.parent?.recordName {
            guard parent != record.recordName else { throw WireError(.invalidArguments, "Record '\(parent)' cannot be its own parent.") }
            let inRequest = pending[parent] != nil
            guard try inRequest || (!deleteNames.contains(parent) && isLive(parent, zone: zone, known: &liveParents)) else {
                throw WireError(.referenceViolation, "The parent '\(parent)' of '\(record.recordName)' does not exist in zone \(zone.name).",
                                details: ["parent": .string(parent)])
            }
        }
        if !record.isShare, let live, let merged = try keepingUnsentKeys(record, fieldsJSON: fieldsJSON, live: live) {
            return .save(record, fieldsJSON: merged.text, fields: merged.fields, share: share, existing: existing)
        }
        return .save(record, fieldsJSON: fieldsJSON, fields: record.fieldsAreStoredText ? nil : RecordFields.withoutNulls(record.fields),
                     share: share, existing: existing)
    }

    /// CloudKit writes the keys a save carries, under every save policy: a key set to null is
    /// removed, and a key the save leaves out keeps the server's value (an older app version does
    /// not know a newer one's fields; `allKeys` only means the client sends all the keys it has).
    /// Nil when the save carries exactly the stored keys and no null: it is stored as sent.
    private func keepingUnsentKeys(_ record: CloudRecord, fieldsJSON: String, live: StoredRecord) throws -> (text: String, fields: [String: JSONValue])? {
        let removed = record.fieldsAreStoredText ? [] : record.fields.filter { $0.value.isNull }.map(\.key)
        if removed.isEmpty, let sent = StoredFields.typeSignature(fieldsJSON), sent == live.fields.flatMap(StoredFields.typeSignature) {
            return nil
        }
        var fields = state.decodeFields(live.fields)
        for (name, value) in state.decodeFields(fieldsJSON) { fields[name] = value }
        for name in removed { fields.removeValue(forKey: name) }
        let text = try state.encodeFields(fields)
        let limit = state.limits.maxRecordBytes + (try AssetFields.check(text, record: record.recordName, limits: state.limits))
        guard text.utf8.count <= limit else {
            throw WireError(.limitExceeded, "Record '\(record.recordName)' would be \(text.utf8.count) bytes with the fields it keeps; a record may hold at most \(limit).",
                            details: ["bytes": .int(text.utf8.count), "maxRecordBytes": .int(limit)])
        }
        return (text, fields)
    }

    /// Whether `name` is a live record of `zone`, from `known` when this request read it already.
    private func isLive(_ name: String, zone: ZoneRow, known: inout [String: Bool]) throws -> Bool {
        if let live = known[name] { return live }
        let live = try state.liveRecord(zone: zone.id, name: name) != nil
        known[name] = live
        return live
    }

    private func checkSharedSave(_ record: CloudRecord, live: StoredRecord?, share: String?, zone: ZoneRow, pending: [String: CloudRecord]) throws {
        if record.isShare || share != live?.share {
            let reason = "only the owner can create or change a share"
            trace?.decide(false, reason, zone: zone.zoneID, record: record.recordName)
            throw WireError(.permissionFailure, "\(caller) may not write '\(record.recordName)': \(reason).", details: ["reason": .string(reason)])
        }
        let target = try state.governingShare(zone: zone.id, from: record.recordName, pending: pending)
        try state.requireSharedAccess(zone: zone, share: target, caller: caller, write: true, record: record.recordName, trace: trace)
        if live != nil {
            let origin = try state.governingShare(zone: zone.id, from: record.recordName)
            if origin != target {
                try state.requireSharedAccess(zone: zone, share: origin, caller: caller, write: true, record: record.recordName, trace: trace)
            }
        }
    }

    private func checkNewShare(_ record: CloudRecord, live: StoredRecord?, zone: ZoneRow, pending: [String: CloudRecord]) throws {
        guard live == nil else { return }
        guard !zone.isDefaultZone else {
            throw WireError(.invalidArguments, "Shares live in custom zones; _defaultZone cannot hold a share.")
        }
        if record.recordName == CloudKitNames.zoneShareName {
            if let other = try state.db.scalar("SELECT name FROM shares WHERE zone = ?", [zone.id])?.string {
                throw WireError(.alreadyShared, "Zone \(zone.name) already has share '\(other)'; a zone-wide share would put its records in two shares.",
                                details: ["otherShare": .string(other)])
            }
            return
        }
        guard pending.values.contains(where: { $0.share?.recordName == record.recordName && !$0.isShare }) else {
            throw WireError(.invalidArguments, "A new share '\(record.recordName)' must be saved together with its root record (a record whose share references it) in the same request.")
        }
    }

    private func checkNewRoot(_ record: CloudRecord, share: String, live: StoredRecord?, zone: ZoneRow, pending: [String: CloudRecord]) throws {
        if let current = live?.share, current != share {
            throw WireError(.alreadyShared, "Record '\(record.recordName)' is already the root of share '\(current)'.",
                            details: ["otherShare": .string(current)])
        }
        let shareExists = try state.db.scalar("SELECT 1 FROM shares WHERE zone = ? AND name = ?", [zone.id, share]) != nil
        guard shareExists || pending[share]?.isShare == true else {
            throw WireError(.invalidArguments, "Record '\(record.recordName)' references share '\(share)', which is neither stored nor in this request.")
        }
        if let root = try state.db.scalar("SELECT root FROM shares WHERE zone = ? AND name = ?", [zone.id, share])?.string, root != record.recordName {
            throw WireError(.alreadyShared, "Share '\(share)' already has root '\(root)'.", details: ["otherRoot": .string(root)])
        }
    }

    private func checkTag(_ record: CloudRecord, live: StoredRecord?, existing: StoredRecord?, zone: ZoneRow) throws {
        let effective = record.isShare ? .ifServerRecordUnchanged : policy
        guard effective == .ifServerRecordUnchanged else { return }
        switch (live, record.recordChangeTag) {
        case let (live?, tag?) where tag == live.tag:
            return
        case let (live?, tag?):
            let ancestor = try state.ancestor(zone: zone, name: record.recordName, tag: tag, caller: caller)
            throw WireError(.serverRecordChanged,
                            "Record '\(record.recordName)' changed on the server (server tag \(live.tag), client tag \(tag)); merge and retry with the server's tag.",
                            details: try RecordConflict(server: state.render(live, zone: zone, caller: caller), client: record, ancestor: ancestor).details())
        case let (live?, nil):
            throw WireError(.serverRejectedRequest,
                            "Record '\(record.recordName)' already exists on the server but the save carries no change tag (a new record with a taken name); fetch it and merge.",
                            details: try RecordConflict(server: state.render(live, zone: zone, caller: caller)).details())
        case let (nil, tag?):
            throw WireError(.unknownItem, "Record '\(record.recordName)' does not exist on the server (it was deleted) but the save carries change tag \(tag).",
                            details: ["deleted": .bool(existing?.deleted == true)])
        case (nil, nil):
            return
        }
    }

    func planDelete(_ item: DeleteItem, zone: ZoneRow, deleteNames: Set<String>) throws -> Plan {
        guard let live = try state.liveRecord(zone: zone.id, name: item.recordName) else { return .delete(nil) }
        if scope == .shared {
            if live.type == CloudKitNames.shareRecordType {
                guard try state.participation(zone: zone.id, share: live.name, user: caller) != nil else {
                    let reason = "\(caller) is not a participant of share \(live.name)"
                    trace?.decide(false, reason, zone: zone.zoneID, record: live.name)
                    throw WireError(.permissionFailure, "\(caller) may not delete share '\(live.name)': \(reason).", details: ["reason": .string(reason)])
                }
                trace?.decide(true, "participant deleting the share leaves it", zone: zone.zoneID, record: live.name)
                return .leaveShare(live.name)
            }
            let share = try state.governingShare(zone: zone.id, from: live.name)
            try state.requireSharedAccess(zone: zone, share: share, caller: caller, write: true, record: live.name, trace: trace)
            if live.share != nil {
                let reason = "only the owner can delete the root of a share"
                trace?.decide(false, reason, zone: zone.zoneID, record: live.name)
                throw WireError(.permissionFailure, "\(caller) may not delete '\(live.name)': \(reason).", details: ["reason": .string(reason)])
            }
        } else {
            trace?.decide(true, "owner deletes in own zone", zone: zone.zoneID, record: live.name)
        }
        let orphans = try state.liveChildren(zone: zone.id, of: live.name).filter { !deleteNames.contains($0) }
        guard orphans.isEmpty else {
            throw WireError(.referenceViolation, "Deleting '\(live.name)' would leave \(orphans.count) child record(s) behind; delete them in the same request.",
                            details: ["children": .array(orphans.prefix(20).map { .string($0) })])
        }
        return .delete(live)
    }
}
