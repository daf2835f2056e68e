import MeowWire

/// One replay's working state: the cloud, each device's local copy and queue, the shares.
struct Replay {
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
        /// Per record, the zone of the cloud copy this device last had: where its updates go.
        var baseZone: [String: ZoneRef] = [:]

        mutating func dequeue(_ uuid: String) -> PendingRecord? {
            queue.removeAll { $0 == uuid }
            return pending.removeValue(forKey: uuid)
        }

        mutating func adopt(_ uuid: String, _ record: CloudRecord?) {
            if let record {
                view[uuid] = LocalObject(entity: record.entity, zone: record.zone, fields: record.fields)
                base[uuid] = record.fields.mapValues(\.entry)
                baseZone[uuid] = record.zone
            } else {
                view[uuid] = nil
                base[uuid] = nil
                baseZone[uuid] = nil
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
    /// Each object's to-one relationships as the history set them: field → destination UUID.
    var relations: [String: [String: String]] = [:]
    /// Each share's root object.
    var shareRoots: [ZoneRef: String] = [:]
    var devices: [String: Device] = [:]
    var losers: [String: [String: Set<Int>]] = [:]
    var deleteLosers: [String: Set<Int>] = [:]

    init(policies: [String: DeletePolicy]) { self.policies = policies }

    mutating func apply(_ entry: HistoryEntry) {
        if devices[entry.actor] == nil, entry.user != nil, entry.actor != "cloud", entry.actor != "explorer" {
            devices[entry.actor] = Device(user: entry.user)
        }
        // A failed send the runner found (in the cloud's log) to have saved some batches first.
        if entry.op == HistoryOp.send, entry.outcome.tookEffect == false, entry.params["carried"] != nil {
            return send(entry.actor, at: entry.index, carrying: carried(by: entry))
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
        state.indexValues()
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
