import MeowWire

/// Fetches: the cloud's records come to a device and meet its unsent edits.
extension Replay {
    mutating func fetch(_ name: String, at index: Int) {
        guard var device = devices[name] else { return }
        state.fetches[name, default: []].append(index)
        let user = device.user ?? name
        // Rule: a participant who loses a zone (left, removed, share stopped) discards the
        // changes queued for it, and its device removes that zone's objects.
        for (uuid, pending) in device.pending where !state.reads(user, pending.zone) {
            let why = permissionWords(user, pending.zone)
            for entry in pending.writes {
                state.wholeFates[entry] = .discarded(at: index, reason: "\(name) lost zone \(pending.zone)")
                state.refusals[entry] = Refusal(at: index, device: name, why: why, kind: .discarded)
            }
            _ = device.dequeue(uuid)
        }
        for (uuid, object) in device.view where !state.reads(user, object.zone) { device.adopt(uuid, nil) }
        for (uuid, record) in cloud.sorted(by: { $0.key < $1.key }) where state.reads(user, record.zone) {
            if device.pending[uuid]?.delete != nil { continue }
            var object = device.view[uuid] ?? LocalObject(entity: record.entity, zone: record.zone, fields: [:])
            object.zone = record.zone
            var ancestor = device.base[uuid] ?? [:]
            for (field, theirs) in record.fields {
                guard var pending = device.pending[uuid], let mine = pending.fields[field], mine.entry != theirs.entry else {
                    object.fields[field] = theirs
                    ancestor[field] = theirs.entry
                    continue
                }
                if theirs.entry == ancestor[field] { continue }
                // Rule: unsent local edits of a fetched record are merged with it per field.
                if mine.isLater(than: theirs) {
                    pending.wonAgainst[field] = theirs.entry
                } else {
                    pending.fields[field] = nil
                    setFate(mine.entry, field, .lostMerge(to: theirs.entry))
                    losers[uuid, default: [:]][field, default: []].insert(mine.entry)
                    object.fields[field] = theirs
                }
                ancestor[field] = theirs.entry
                device.pending[uuid] = pending
            }
            device.view[uuid] = object
            device.base[uuid] = ancestor
            device.baseZone[uuid] = record.zone
        }
        for (uuid, deleter) in deletedBy where cloud[uuid] == nil && device.view[uuid] != nil {
            if let pending = device.pending[uuid], !pending.fields.isEmpty, policy(pending.entity) == .resurrect { continue }
            // Rule: delete versus edit is deleteWins by default: the local edits go with the object.
            if let pending = device.dequeue(uuid) {
                for entry in pending.writes { state.wholeFates[entry] = .deleted(by: deleter) }
                deleteLosers[uuid, default: []].formUnion(pending.writes)
            }
            device.adopt(uuid, nil)
        }
        devices[name] = device
    }
}
