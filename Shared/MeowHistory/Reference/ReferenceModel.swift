import MeowWire

/// The documented rules of mirroring and sharing (docs/RULES.md, "Saving, conflicts and merge
/// policies", "Shares and participants", "Mirroring between them"), restated from the docs alone
/// and replayed over a history: what the cloud must end with, record by record and field by
/// field, and what became of every write. It shares no code with the services on purpose: a
/// misreading of the rules in the services must not be copied into the judge.
public struct ReferenceModel: Sendable {
    public var deletePolicies: [String: DeletePolicy]

    public init(deletePolicies: [String: DeletePolicy] = [:]) {
        self.deletePolicies = deletePolicies
    }

    /// The model for a run: its recorded per-entity policies (an unknown name reads as the
    /// default, deleteWins, and is noted in the assumptions).
    public init(_ run: RunRecord) {
        self.init(deletePolicies: run.deletePolicies.compactMapValues(DeletePolicy.init(rawValue:)))
    }

    public func replay(_ history: [HistoryEntry]) -> ExpectedState {
        var replay = Replay(policies: deletePolicies)
        for entry in history.sorted(by: { $0.index < $1.index }) { replay.apply(entry) }
        return replay.finish()
    }

    public func replay(_ run: RunRecord) -> ExpectedState {
        var state = replay(run.history)
        for (entity, name) in run.deletePolicies where DeletePolicy(rawValue: name) == nil {
            state.assumptions.append("\(entity)'s delete policy \"\(name)\" is none of deleteWins, resurrect; it was read as deleteWins.")
        }
        return state
    }
}

/// One replay's working state: the cloud, each device's local copy and queue, the shares.
private struct Replay {
    struct PendingRecord {
        var entity: String
        var zone: ZoneRef
        /// The newest local value of each changed field: the payload is built when the send is.
        var fields: [String: FieldWrite] = [:]
        var writes: [Int] = []
        var delete: Int?
        /// Per field, the cloud write a fetch's merge already decided this edit wins over.
        var wonAgainst: [String: Int] = [:]
    }

    struct LocalObject {
        var entity: String
        var zone: ZoneRef
        var fields: [String: FieldWrite]
    }

    struct Device {
        var user: String?
        var queue: [String] = []
        var pending: [String: PendingRecord] = [:]
        var view: [String: LocalObject] = [:]
        /// Per record and field, the cloud write this device last had: the merge's ancestor.
        var base: [String: [String: Int]] = [:]

        mutating func dequeue(_ uuid: String) -> PendingRecord? {
            queue.removeAll { $0 == uuid }
            return pending.removeValue(forKey: uuid)
        }

        mutating func adopt(_ uuid: String, _ record: CloudRecord?) {
            if let record {
                view[uuid] = LocalObject(entity: record.entity, zone: record.zone, fields: record.fields)
                base[uuid] = record.fields.mapValues(\.entry)
            } else {
                view[uuid] = nil
                base[uuid] = nil
            }
        }
    }

    struct CloudRecord {
        var entity: String
        var zone: ZoneRef
        var fields: [String: FieldWrite]
    }

    let policies: [String: DeletePolicy]
    var state = ExpectedState()
    var cloud: [String: CloudRecord] = [:]
    var deletedBy: [String: Int] = [:]
    var entities: [String: String] = [:]
    var objectZone: [String: ZoneRef] = [:]
    var links: [String: Set<String>] = [:]
    var devices: [String: Device] = [:]
    var losers: [String: [String: Set<Int>]] = [:]
    var deleteLosers: [String: Set<Int>] = [:]

    init(policies: [String: DeletePolicy]) { self.policies = policies }

    mutating func apply(_ entry: HistoryEntry) {
        if devices[entry.actor] == nil, entry.user != nil, entry.actor != "cloud", entry.actor != "explorer" {
            devices[entry.actor] = Device(user: entry.user)
        }
        // Only what took effect changes anything; an unknown outcome is the resolution check's.
        guard entry.outcome.tookEffect == true else { return }
        if let write = WriteRequest(entry) { return localWrite(write) }
        let target = entry.params["device"]?.stringValue ?? entry.actor
        switch entry.op {
        case HistoryOp.send: send(entry.actor, at: entry.index, carrying: carried(by: entry))
        case HistoryOp.fetch: fetch(entry.actor, at: entry.index)
        case HistoryOp.pushDeliver: fetch(target, at: entry.index)
        case HistoryOp.shareCreate: shareCreate(entry)
        case HistoryOp.shareAccept, HistoryOp.shareLeave, HistoryOp.shareStop, HistoryOp.sharePermission, HistoryOp.shareRemove:
            shareChange(entry)
        case HistoryOp.accountSwitch:
            discardAll(target, at: entry.index, reason: "its device's account was switched")
            devices[target, default: Device()].user = entry.params["user"]?.stringValue
        case HistoryOp.settle: settle(at: entry.index)
        default: break
        }
    }

    // MARK: Local writes

    mutating func localWrite(_ write: WriteRequest) {
        var device = devices[write.device] ?? Device(user: write.user)
        let user = device.user ?? write.user ?? write.device
        state.writes[write.entry] = write
        state.wholeFates[write.entry] = .unsent
        entities[write.uuid] = write.entity
        for value in write.fields.values {
            if let target = value.stringValue, write.kind == .link || entities[target] != nil { links[write.uuid, default: []].insert(target) }
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

    /// Where an object's record lives. Rule: an object related to a shared object after sharing
    /// is stored with it, in the share's zone; otherwise it stays where it is, and a new one goes
    /// to its user's private zone (or, in the shared store, the one share the user is in).
    func zone(for write: WriteRequest, user: String) -> ZoneRef {
        if let known = objectZone[write.uuid], known.zoneName != ZoneRef.coreDataZoneName { return known }
        let targets = write.fields.values.compactMap(\.stringValue).compactMap { objectZone[$0] }
        if let shared = targets.first(where: { $0.zoneName != ZoneRef.coreDataZoneName }) { return shared }
        if let known = objectZone[write.uuid] { return known }
        if write.store == "shared" {
            let joined = state.shares.filter { $0.value.reads(user) }.map(\.key)
            if joined.count == 1 { return joined[0] }
        }
        return .privateZone(of: user)
    }

    // MARK: Sends

    /// Which queued records a send carried. Rule: a write reaches the cloud only through a later
    /// sync.send of its device that took effect. The result counts records but names none, so:
    /// an explicit `carried` list (record names) in the result wins; a result with nothing left
    /// queued (`pending`, `deferred` and `refused` all 0) or a send resolved committed carried the
    /// whole queue; one with n left carried all but the last n, since the queue is sent in order.
    func carried(by entry: HistoryEntry) -> Carried {
        guard let result = entry.outcome.result else { return .all }
        if let names = result["carried"]?.arrayValue { return .only(Set(names.compactMap(\.stringValue))) }
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
        for uuid in queue { sendRecord(name, uuid, at: index) }
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
            if let record = cloud.removeValue(forKey: uuid) {
                for (field, value) in record.fields { setFate(value.entry, field, .deleted(by: delete)) }
                deletedBy[uuid] = delete
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

    // MARK: Fetches

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

    // MARK: Shares, accounts, settling

    mutating func shareCreate(_ entry: HistoryEntry) {
        guard let root = entry.params["uuid"]?.stringValue,
              let zoneName = entry.outcome.result?["zoneName"]?.stringValue ?? entry.params["zoneName"]?.stringValue else { return }
        let owner = devices[entry.actor]?.user ?? entry.user ?? entry.actor
        let zone = ZoneRef(owner: owner, zoneName: zoneName)
        var share = ShareModel()
        for participant in entry.params["participants"]?.arrayValue ?? [] {
            guard let user = participant["user"]?.stringValue else { continue }
            share.participants[user] = .init(permission: participant["permission"]?.stringValue ?? "readOnly", acceptance: "pending")
        }
        state.shares[zone] = share
        // Rule: a share covers a root and the objects related to it, which move into its zone.
        let graph = hierarchy(of: root)
        for uuid in graph {
            objectZone[uuid] = zone
            cloud[uuid]?.zone = zone
            for name in devices.keys {
                devices[name]?.pending[uuid]?.zone = zone
                devices[name]?.view[uuid]?.zone = zone
            }
        }
        // Sharing uploads the graph: the owner's device sends what it has queued of it.
        let queued = devices[entry.actor]?.queue.filter(graph.contains) ?? []
        for uuid in queued { sendRecord(entry.actor, uuid, at: entry.index) }
    }

    /// The root and every object whose relationships lead to it.
    func hierarchy(of root: String) -> Set<String> {
        var graph: Set<String> = [root]
        var grew = true
        while grew {
            grew = false
            for (uuid, targets) in links where !graph.contains(uuid) && !targets.isDisjoint(with: graph) {
                graph.insert(uuid)
                grew = true
            }
        }
        return graph
    }

    mutating func shareChange(_ entry: HistoryEntry) {
        let user = devices[entry.actor]?.user ?? entry.user ?? entry.actor
        guard let zoneName = entry.params["zoneName"]?.stringValue else { return }
        let owner = entry.params["owner"]?.stringValue
        let zone = owner.map { ZoneRef(owner: $0, zoneName: zoneName) }
            ?? (state.shares[ZoneRef(owner: user, zoneName: zoneName)] != nil ? ZoneRef(owner: user, zoneName: zoneName)
                : state.shares.keys.sorted().first { $0.zoneName == zoneName })
        guard let zone else { return }
        var share = state.shares[zone] ?? ShareModel()
        switch entry.op {
        case HistoryOp.shareAccept:
            share.participants[user, default: .init(permission: "readOnly", acceptance: "pending")].acceptance = "accepted"
        case HistoryOp.shareLeave:
            share.participants[user]?.acceptance = "removed"
        case HistoryOp.shareStop:
            share.active = false
        case HistoryOp.sharePermission:
            guard let member = entry.params["user"]?.stringValue else { return }
            let permission = entry.params["permission"]?.stringValue ?? "readOnly"
            share.participants[member, default: .init(permission: permission, acceptance: "pending")].permission = permission
        case HistoryOp.shareRemove:
            guard let member = entry.params["user"]?.stringValue else { return }
            share.participants[member]?.acceptance = "removed"
        default: return
        }
        state.shares[zone] = share
        // Leaving answers with a fetch: the zone and its queued changes leave the device at once.
        if entry.op == HistoryOp.shareLeave { fetch(entry.actor, at: entry.index) }
    }

    mutating func discardAll(_ name: String, at index: Int, reason: String) {
        guard var device = devices[name] else { return }
        for pending in device.pending.values {
            for entry in pending.writes { state.wholeFates[entry] = .discarded(at: index, reason: reason) }
        }
        device.pending = [:]
        device.queue = []
        device.view = [:]
        device.base = [:]
        devices[name] = device
    }

    /// A settle recorded as one entry: every device sends, then every device fetches, twice
    /// (in device-name order), which is as quiet as the rules can make it.
    mutating func settle(at index: Int) {
        state.assumptions.append("settle #\(index) was replayed as two rounds of every device sending, then every device fetching, in device-name order.")
        for _ in 0..<2 {
            for name in devices.keys.sorted() { send(name, at: index, carrying: .all) }
            for name in devices.keys.sorted() { fetch(name, at: index) }
        }
    }

    /// Why `user` may not write `zone` now, in words.
    func permissionWords(_ user: String, _ zone: ZoneRef) -> String {
        guard let share = state.shares[zone] else { return "\(user) is not a participant of \(zone), which is not shared" }
        guard share.active else { return "the share of \(zone) was stopped" }
        guard let participant = share.participants[user] else { return "\(user) is not a participant of \(zone)" }
        if participant.acceptance != "accepted" { return "\(user) is \(participant.acceptance), not accepted, on \(zone)" }
        return "\(user) had \(participant.permission) on \(zone)"
    }

    func policy(_ entity: String) -> DeletePolicy { policies[entity] ?? .deleteWins }

    mutating func setFate(_ entry: Int, _ field: String, _ fate: WriteFate) {
        state.fieldFates[entry, default: [:]][field] = fate
    }

    mutating func finish() -> ExpectedState {
        let known = Set(entities.keys)
        for uuid in known {
            let entity = entities[uuid] ?? "object"
            if let record = cloud[uuid] {
                state.records[uuid] = ExpectedRecord(uuid: uuid, entity: entity, zone: record.zone, exists: true,
                                                     fields: record.fields, mergeLosers: losers[uuid] ?? [:])
            } else {
                state.records[uuid] = ExpectedRecord(uuid: uuid, entity: entity, zone: objectZone[uuid] ?? .privateZone(of: "?"),
                                                     exists: false, deletedBy: deletedBy[uuid], mergeLosers: losers[uuid] ?? [:],
                                                     deleteLosers: deleteLosers[uuid] ?? [])
            }
        }
        return state
    }
}
