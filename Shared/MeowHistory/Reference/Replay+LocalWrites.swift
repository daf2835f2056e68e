import MeowWire

/// A device's own saves: they change its copy and its queue, not the cloud.
extension Replay {
    mutating func localWrite(_ write: WriteRequest) {
        var device = devices[write.device] ?? Device(user: write.user)
        let user = device.user ?? write.user ?? write.device
        state.writes[write.entry] = write
        state.wholeFates[write.entry] = .unsent
        entities[write.uuid] = write.entity
        for (field, value) in write.fields {
            if let target = value.stringValue, write.kind == .link || entities[target] != nil {
                relations[write.uuid, default: [:]][field] = target
            } else {
                relations[write.uuid]?[field] = nil
            }
        }
        if write.kind == .delete {
            // Delete rules run in the deleting save; what they removed is deleted like the object.
            for uuid in [write.uuid] + write.cascade {
                device.view[uuid] = nil
                var pending = device.pending[uuid]
                    ?? PendingRecord(entity: entities[uuid] ?? write.entity, zone: objectZone[uuid] ?? .privateZone(of: user))
                // The queue holds record names and the payload is built at send time: a row gone
                // by then sends its delete, and the edits queued before it never go out.
                for earlier in pending.writes { state.wholeFates[earlier] = .deleted(by: write.entry) }
                pending.fields = [:]
                pending.delete = write.entry
                pending.writes.append(write.entry)
                enqueue(&device, uuid, pending)
            }
            devices[write.device] = device
            return
        }
        let zone = zone(for: write, user: user)
        objectZone[write.uuid] = zone
        var object = device.view[write.uuid] ?? LocalObject(entity: write.entity, zone: zone, fields: [:])
        var pending = device.pending[write.uuid] ?? PendingRecord(entity: write.entity, zone: zone)
        for (field, value) in write.fields {
            let mine = FieldWrite(value: value, stamp: write.stamp, device: write.device, entry: write.entry)
            // The newest value is the one sent: an earlier unsent edit of the field is replaced.
            if let earlier = pending.fields[field] { setFate(earlier.entry, field, .overwritten(by: write.entry)) }
            pending.fields[field] = mine
            pending.wonAgainst[field] = nil
            object.fields[field] = mine
        }
        object.zone = zone
        pending.zone = zone
        pending.writes.append(write.entry)
        device.view[write.uuid] = object
        enqueue(&device, write.uuid, pending)
        devices[write.device] = device
    }

    func enqueue(_ device: inout Device, _ uuid: String, _ pending: PendingRecord) {
        if device.pending[uuid] == nil { device.queue.append(uuid) }
        device.pending[uuid] = pending
    }

    /// Where an object's record lives: where its insert put it when that names a zone. Rule: an
    /// object related to a shared object after sharing is stored with it, in the share's zone;
    /// otherwise it stays where it is, and a new one goes to its user's private zone (or, in the
    /// shared store, the one share the user is in).
    mutating func zone(for write: WriteRequest, user: String) -> ZoneRef {
        if write.kind == .insert, let named = write.zone { return named }
        if let known = objectZone[write.uuid], known.zoneName != ZoneRef.coreDataZoneName { return known }
        let targets = write.fields.values.compactMap(\.stringValue).compactMap { objectZone[$0] }
        if let shared = targets.first(where: { $0.zoneName != ZoneRef.coreDataZoneName }) { return shared }
        if let known = objectZone[write.uuid] { return known }
        if write.store == "shared" {
            let joined = state.shares.filter { $0.value.reads(user) }.map(\.key).sorted()
            if joined.count == 1 { return joined[0] }
            state.assumptions.append("\(write.described) went to the shared store without naming a shared object, and \(user) is in \(joined.count) shares; the model put it in \(user)'s private zone.")
        }
        return .privateZone(of: user)
    }
}
