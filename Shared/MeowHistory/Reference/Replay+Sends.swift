import MeowWire

/// Sends: where the queued writes meet the cloud, its permissions and its merge.
extension Replay {
    /// Which queued records a send carried. Rule: a write reaches the cloud only through a later
    /// sync.send of its device that took effect. The result counts records but names none, so:
    /// an explicit `carried` list (record names) in the result or the params, which the runner
    /// may read from the cloud's log, wins; a result with nothing left queued (`pending`,
    /// `deferred` and `refused` all 0) or a send resolved committed carried the whole queue; one
    /// with n left carried all but the last n, since the queue is sent in order.
    func carried(by entry: HistoryEntry) -> Carried {
        if let names = (entry.outcome.result?["carried"] ?? entry.params["carried"])?.arrayValue {
            return .only(Set(names.compactMap(\.stringValue)))
        }
        guard let result = entry.outcome.result else { return .all }
        let left = (result["pending"]?.intValue ?? 0) + (result["deferred"]?.intValue ?? 0) + (result["refused"]?.intValue ?? 0)
        return left == 0 ? .all : .allBut(left)
    }

    enum Carried {
        case all, allBut(Int), only(Set<String>)
    }

    mutating func send(_ name: String, at index: Int, carrying carried: Carried) {
        guard let device = devices[name] else { return }
        var queue = device.queue
        switch carried {
        case .all: break
        case let .allBut(left):
            queue = Array(queue.dropLast(left))
            state.assumptions.append("\(name)'s sync.send #\(index) left \(left) queued without naming them; the model took them to be the last \(left) of its queue.")
        case let .only(names): queue = queue.filter(names.contains)
        }
        let missed = queue.filter { device.updatesAMissingCopy($0, in: cloud, deleted: deletedBy) }
        for uuid in queue { sendRecord(name, uuid, at: index) }
        // Rule: an update answered unknownItem (its record moved to another zone or deleted since
        // this device last had it) makes the send fetch the store's changes before it settles.
        if !missed.isEmpty { fetch(name, at: index) }
    }

    mutating func sendRecord(_ name: String, _ uuid: String, at send: Int) {
        guard var device = devices[name], let pending = device.dequeue(uuid) else { return }
        defer { devices[name] = device }
        let user = device.user ?? name
        // Rule: a participant's write is accepted only with readWrite on an accepted share of
        // its zone; the owner always may.
        if pending.zone.owner != user && !(state.shares[pending.zone]?.writes(user) ?? false) {
            let why = permissionWords(user, pending.zone)
            for entry in pending.writes {
                state.wholeFates[entry] = .refused(send: send)
                state.refusals[entry] = Refusal(at: send, device: name, why: why, kind: .refused)
            }
            // Rule: a refused edit is reverted to the server's copy, a refused insert deleted.
            device.adopt(uuid, cloud[uuid])
            return
        }
        if let delete = pending.delete {
            state.wholeFates[delete] = .holds
            // Rule: the owner deleting a share's root deletes the share's zone, so participants lose it.
            let zones = shareRoots.filter { $0.value == uuid && state.shares[$0.key]?.active == true }.map(\.key)
            for zone in zones { state.shares[zone]?.active = false }
            let removed = [uuid] + cloud.filter { zones.contains($0.value.zone) && $0.key != uuid }.map(\.key).sorted()
            for gone in removed {
                guard let record = cloud.removeValue(forKey: gone) else { continue }
                for (field, value) in record.fields { setFate(value.entry, field, .deleted(by: delete)) }
                deletedBy[gone] = delete
            }
            device.adopt(uuid, nil)
            return
        }
        if cloud[uuid] == nil, let deleter = deletedBy[uuid] {
            // Rule: delete versus edit is a policy per entity, deleteWins by default.
            if policy(pending.entity) == .deleteWins {
                for entry in pending.writes { state.wholeFates[entry] = .deleted(by: deleter) }
                deleteLosers[uuid, default: []].formUnion(pending.writes)
                device.adopt(uuid, nil)
                return
            }
            // resurrect: the record is sent again without a tag, carrying every field it has here.
            let fields = device.view[uuid]?.fields ?? pending.fields
            for entry in pending.writes { state.wholeFates[entry] = .holds }
            for (field, value) in fields { setFate(value.entry, field, .holds) }
            if let last = pending.writes.last { state.wholeFates[deleter] = .overwritten(by: last) }
            deletedBy[uuid] = nil
            let record = CloudRecord(entity: pending.entity, zone: pending.zone, fields: fields)
            cloud[uuid] = record
            device.adopt(uuid, record)
            return
        }
        // Rule: record names are the objects' UUIDs, so a resent insert meets itself (one record).
        var record = cloud[uuid] ?? CloudRecord(entity: pending.entity, zone: pending.zone, fields: [:])
        record.zone = pending.zone
        let ancestor = device.base[uuid] ?? [:]
        for entry in pending.writes { state.wholeFates[entry] = .holds }
        for (field, mine) in pending.fields.sorted(by: { $0.key < $1.key }) {
            guard let theirs = record.fields[field], theirs.entry != mine.entry else {
                record.fields[field] = mine
                setFate(mine.entry, field, .holds)
                continue
            }
            if theirs.entry == ancestor[field] && pending.wonAgainst[field] != theirs.entry {
                // Rule: a field only one side changed keeps that side's value.
                setFate(theirs.entry, field, .overwritten(by: mine.entry))
                record.fields[field] = mine
                setFate(mine.entry, field, .holds)
            } else if pending.wonAgainst[field] == theirs.entry || mine.isLater(than: theirs) {
                // Rule: a field both changed goes to the later edit by stamp, ties to the greater device name.
                setFate(theirs.entry, field, .lostMerge(to: mine.entry))
                losers[uuid, default: [:]][field, default: []].insert(theirs.entry)
                record.fields[field] = mine
                setFate(mine.entry, field, .holds)
            } else {
                setFate(mine.entry, field, .lostMerge(to: theirs.entry))
                losers[uuid, default: [:]][field, default: []].insert(mine.entry)
            }
        }
        cloud[uuid] = record
        // Each verdict is applied before the entry leaves the queue: the device holds the cloud's copy.
        device.adopt(uuid, record)
    }
}

extension Replay.Device {
    /// Whether an update of `uuid` sent now goes to a copy the cloud no longer has where this
    /// device last had it: the record moved to another zone, or was deleted.
    func updatesAMissingCopy(_ uuid: String, in cloud: [String: Replay.CloudRecord], deleted: [String: Int]) -> Bool {
        guard let pending = pending[uuid], pending.delete == nil, let zone = baseZone[uuid] else { return false }
        guard let record = cloud[uuid] else { return deleted[uuid] != nil }
        return record.zone != zone
    }
}
